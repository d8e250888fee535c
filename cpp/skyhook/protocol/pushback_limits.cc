#include "skyhook/protocol/pushback_limits.h"

#include "skyhook/errors/error.h"

namespace skyhook {

arrow::Result<PushbackLimits> PushbackLimits::Decode(const HeaderReader& header) {
  PushbackLimits limits;
  ARROW_ASSIGN_OR_RAISE(limits.max_in_flight, header.Int64("max_in_flight"));
  ARROW_ASSIGN_OR_RAISE(limits.max_slice_cpu_ns, header.Int64("max_slice_cpu_ns"));
  if ((limits.max_in_flight && *limits.max_in_flight < 0) ||
      (limits.max_slice_cpu_ns && *limits.max_slice_cpu_ns < 0)) {
    return Error(ErrorCode::kInvalidRequest, "push-back limits must not be negative");
  }
  return limits;
}

}  // namespace skyhook
