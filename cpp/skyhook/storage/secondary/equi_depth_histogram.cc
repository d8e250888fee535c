#include "skyhook/storage/secondary/equi_depth_histogram.h"

#include <algorithm>
#include <vector>

#include <arrow/array/builder_primitive.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/compute/api_vector.h>

namespace skyhook {

arrow::Result<std::shared_ptr<arrow::Array>> EquiDepthBounds(
    const std::shared_ptr<arrow::Array>& values, arrow::compute::ExecContext* context) {
  std::shared_ptr<arrow::Array> kept = values;
  if (arrow::is_floating(values->type_id())) {
    // NaN sorts after every number but compares with none: not a bound.
    ARROW_ASSIGN_OR_RAISE(auto nan, arrow::compute::CallFunction("is_nan", {values}, context));
    ARROW_ASSIGN_OR_RAISE(auto number, arrow::compute::CallFunction("invert", {nan}, context));
    ARROW_ASSIGN_OR_RAISE(
        auto filtered,
        arrow::compute::Filter(values, number, arrow::compute::FilterOptions::Defaults(), context));
    kept = filtered.make_array();
  }
  ARROW_ASSIGN_OR_RAISE(auto non_null, arrow::compute::CallFunction("drop_null", {kept}, context));
  kept = non_null.make_array();
  auto order =
      arrow::compute::SortIndices(*kept, arrow::compute::ArraySortOptions::Defaults(), context);
  if (!order.ok()) return nullptr;  // no order: lists, structs, ...
  const int64_t n = kept->length();
  arrow::Int64Builder picks;
  if (n > 0) {
    const int64_t count = std::min<int64_t>(kHistogramBuckets + 1, n);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t rank = count == 1 ? 0 : i * (n - 1) / (count - 1);
      ARROW_RETURN_NOT_OK(picks.Append((*order)->data()->GetValues<uint64_t>(1)[rank]));
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto positions, picks.Finish());
  ARROW_ASSIGN_OR_RAISE(
      auto bounds,
      arrow::compute::Take(kept, positions, arrow::compute::TakeOptions::Defaults(), context));
  return bounds.make_array();
}

}  // namespace skyhook
