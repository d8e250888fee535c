// IN lists as sets. Arrow's Substrait consumer turns an IN list (a
// SingularOrList) into `x == a or x == b or ...`, which it evaluates as one
// comparison per value and row: a list of a few dozen keys cost 2.6x the CPU
// of a range selecting the same rows. Storage evaluates such chains as one
// is_in: a hash lookup per row.
#pragma once

#include <cstdint>

#include <arrow/compute/expression.h>
#include <arrow/result.h>
#include <arrow/scalar.h>
#include <arrow/type_fwd.h>

namespace skyhook {

/// The field (an index into schema) and values of `x == a or x == b or ...`
/// with literals of x's own type and none null; -1 when the expression is not
/// such a chain. *values receives the literals, in order.
int EqualityChain(const arrow::compute::Expression& expression, const arrow::Schema& schema,
                  arrow::ScalarVector* values);

/// A bound expression with every equality chain of two or more values on a
/// field of an exactly comparable type (not floating point: is_in would match
/// NaN and tell -0.0 from 0.0) as one is_in with the same answer for every
/// row, nulls included; bound again to schema. *collapsed (when given) counts
/// the equalities replaced.
arrow::Result<arrow::compute::Expression> InListsAsSets(const arrow::compute::Expression& bound,
                                                        const arrow::Schema& schema,
                                                        int64_t* collapsed = nullptr);

}  // namespace skyhook
