#include "skyhook/storage/pushback.h"

#include "skyhook/protocol/error.h"

namespace skyhook {

arrow::Status SliceBudget::AfterSlice() {
  ++slices_;
  if (limits_.max_slice_cpu_ns <= 0 || slices_ < kSlicesMeasured) return arrow::Status::OK();
  int64_t per_slice = timer_.ElapsedNanos() / slices_;
  if (per_slice > limits_.max_slice_cpu_ns) {
    return Error(ErrorCode::kPushedBack, "slices cost ", per_slice, " ns of CPU each, over the ",
                 limits_.max_slice_cpu_ns, " ns limit");
  }
  return arrow::Status::OK();
}

bool TooBusy(const InFlightCall& call, const PushbackLimits& limits) {
  return call.running() > limits.max_in_flight;
}

}  // namespace skyhook
