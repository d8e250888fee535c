// What a scan's filter says about single columns, for statistics and indexes:
// the members of its top-level conjunction that compare a column with a
// literal (=, <, <=, >, >=) or test it against an IN list without nulls.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include <arrow/compute/expression.h>
#include <arrow/scalar.h>

namespace skyhook {

/// The terms on one column, rewritten onto field "key" (an index block's).
struct ColumnTerms {
  arrow::compute::Expression predicate;      // the conjunction of the terms
  std::shared_ptr<arrow::Scalar> low, high;  // a range holding every match; null: unbounded
};

/// The terms of a bound filter by the index of the bound schema's field they
/// name; only literals of the field's own type count.
std::map<int, ColumnTerms> ExtractColumnTerms(const arrow::compute::Expression& filter,
                                              const arrow::Schema& bound_schema);

}  // namespace skyhook
