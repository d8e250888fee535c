#include "skyhook/storage/runtime/pushback.h"

#include "skyhook/errors/error.h"

namespace skyhook {

arrow::Status SliceBudget::AfterSlice() {
  ++slices_;
  if (max_slice_cpu_ns_ <= 0 || slices_ < kSlicesMeasured) return arrow::Status::OK();
  int64_t per_slice = timer_.ElapsedNanos() / slices_;
  if (per_slice > max_slice_cpu_ns_) {
    return Error(ErrorCode::kPushedBack, "slices cost ", per_slice, " ns of CPU each, over the ",
                 max_slice_cpu_ns_, " ns limit");
  }
  return arrow::Status::OK();
}

arrow::Status DeclineIfBusy(const InFlightCall& call, const PushbackLimits& requested,
                            const NodeLimits& node) {
  if (call.running() > requested.max_in_flight.value_or(node.max_in_flight)) {
    return Error(ErrorCode::kPushedBack, call.running(), " calls in flight on this node");
  }
  return arrow::Status::OK();
}

}  // namespace skyhook
