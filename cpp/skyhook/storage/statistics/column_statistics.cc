#include "skyhook/storage/statistics/column_statistics.h"

#include <arrow/array/builder_base.h>
#include <arrow/array/util.h>
#include <arrow/compute/api_aggregate.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/util/byte_size.h>

namespace skyhook {

arrow::Status ColumnStatistics::Update(const std::shared_ptr<arrow::Array>& values) {
  null_count_ += values->null_count();
  bytes_ += arrow::util::TotalBufferSize(*values);
  if (!orderable_ || values->null_count() == values->length()) return arrow::Status::OK();
  if (arrow::is_floating(type_->id())) {
    ARROW_ASSIGN_OR_RAISE(auto nan, arrow::compute::CallFunction("is_nan", {values}, context_));
    ARROW_ASSIGN_OR_RAISE(
        auto any_nan,
        arrow::compute::Any(nan, arrow::compute::ScalarAggregateOptions::Defaults(), context_));
    // NaN is outside every [min, max] range, so a range would prune wrongly.
    if (any_nan.scalar_as<arrow::BooleanScalar>().value) orderable_ = false;
  }
  auto extremes =
      arrow::compute::MinMax(values, arrow::compute::ScalarAggregateOptions::Defaults(), context_);
  if (!extremes.ok()) {
    orderable_ = false;  // types without an order (lists, structs, ...) get no range
    return arrow::Status::OK();
  }
  const auto& pair = extremes->scalar_as<arrow::StructScalar>();
  minima_.push_back(pair.value[0]);
  maxima_.push_back(pair.value[1]);
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::StructArray>> ColumnStatistics::Finish() const {
  std::shared_ptr<arrow::Array> min, max;
  if (orderable_ && !minima_.empty()) {
    ARROW_ASSIGN_OR_RAISE(min, Extreme(minima_, 0));
    ARROW_ASSIGN_OR_RAISE(max, Extreme(maxima_, 1));
  } else {
    ARROW_ASSIGN_OR_RAISE(min, arrow::MakeArrayOfNull(type_, 1));
    max = min;
  }
  ARROW_ASSIGN_OR_RAISE(auto nulls, arrow::MakeArrayFromScalar(arrow::Int64Scalar(null_count_), 1));
  ARROW_ASSIGN_OR_RAISE(auto bytes, arrow::MakeArrayFromScalar(arrow::Int64Scalar(bytes_), 1));
  return arrow::StructArray::Make({min, max, nulls, bytes}, {"min", "max", "null_count", "bytes"});
}

// The min (which = 0) or max (which = 1) of the per-slice extremes.
arrow::Result<std::shared_ptr<arrow::Array>> ColumnStatistics::Extreme(
    const std::vector<std::shared_ptr<arrow::Scalar>>& candidates, int which) const {
  ARROW_ASSIGN_OR_RAISE(auto builder, arrow::MakeBuilder(type_));
  ARROW_RETURN_NOT_OK(builder->AppendScalars(candidates));
  ARROW_ASSIGN_OR_RAISE(auto array, builder->Finish());
  ARROW_ASSIGN_OR_RAISE(auto extremes, arrow::compute::MinMax(array));
  return arrow::MakeArrayFromScalar(*extremes.scalar_as<arrow::StructScalar>().value[which], 1);
}

}  // namespace skyhook
