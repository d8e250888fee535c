#include "skyhook/storage/runtime/kept_rows.h"

#include <arrow/compute/api_vector.h>
#include <arrow/scalar.h>

namespace skyhook {

arrow::Result<std::shared_ptr<arrow::RecordBatch>> KeptRows(
    const std::shared_ptr<arrow::RecordBatch>& batch, const arrow::Datum& mask,
    arrow::compute::ExecContext* context) {
  if (!mask.type() || !mask.type()->Equals(*arrow::boolean())) {
    return arrow::Status::TypeError("a filter's mask must be boolean");
  }
  if (mask.is_scalar()) {  // a filter of no column
    const auto& keep = static_cast<const arrow::BooleanScalar&>(*mask.scalar());
    return keep.is_valid && keep.value ? batch : batch->Slice(0, 0);
  }
  ARROW_ASSIGN_OR_RAISE(
      auto kept,
      arrow::compute::Filter(batch, mask, arrow::compute::FilterOptions::Defaults(), context));
  return kept.record_batch();
}

}  // namespace skyhook
