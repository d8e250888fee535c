// An equi-depth histogram of a column's values: the values at the 0, 1/32,
// ..., 32/32 quantiles of its non-null (and non-NaN) values, so each bucket
// holds about the same number of rows. The client estimates a range's
// selectivity from it.
#pragma once

#include <memory>

#include <arrow/array.h>
#include <arrow/compute/exec.h>
#include <arrow/result.h>

namespace skyhook {

constexpr int kHistogramBuckets = 32;

/// kHistogramBuckets + 1 bounds (fewer when there are fewer values; empty
/// without values), of the values' type. nullptr when the type has no order.
arrow::Result<std::shared_ptr<arrow::Array>> EquiDepthBounds(
    const std::shared_ptr<arrow::Array>& values, arrow::compute::ExecContext* context);

}  // namespace skyhook
