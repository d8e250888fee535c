// What a scan's filter says about single columns, for statistics and indexes:
// the members of its top-level conjunction that compare a column with a
// literal (=, <, <=, >, >=) or test it against an IN list without nulls;
// and for reading, the ranges such comparisons allow in integer domains.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include <arrow/compute/expression.h>
#include <arrow/scalar.h>

#include "skyhook/storage/object/physical_prefilter.h"

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

/// The ranges the filter's top-level comparisons of a field (found in the
/// object by name and type: ints, date32, timestamps, decimal128) with a
/// literal allow, the literal converted exactly to the field's integer domain
/// (a decimal's rescaled to the field's scale, rounded inwards); empty when none.
/// *whole (when given) tells whether they are the whole filter: every member
/// of the conjunction converted, so a row matches iff each range holds its value.
std::vector<PhysicalRange> PhysicalRanges(const arrow::compute::Expression& filter,
                                          const arrow::Schema& bound_schema,
                                          const arrow::Schema& object_schema,
                                          bool* whole = nullptr);

}  // namespace skyhook
