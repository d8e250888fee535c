// Push-back: a storage node that is loaded declines or stops work, and says
// so in its reply ("executed: none"); the client then does the work itself.
// The request's limits apply, the node's defaults (NodeLimits) where it sets none.
#pragma once

#include <atomic>
#include <cstdint>

#include <arrow/status.h>

#include "skyhook/protocol/pushback_limits.h"
#include "skyhook/storage/runtime/cpu_timer.h"
#include "skyhook/storage/runtime/node_limits.h"

namespace skyhook {

/// Counts the skyhook calls running in this process (one OSD, or one client
/// with an embedded store) for as long as it lives.
class InFlightCall {
 public:
  InFlightCall() : running_(++count_) {}
  ~InFlightCall() { --count_; }
  InFlightCall(const InFlightCall&) = delete;
  InFlightCall& operator=(const InFlightCall&) = delete;

  /// Calls running when this one started, itself included.
  int64_t running() const { return running_; }

 private:
  static inline std::atomic<int64_t> count_{0};
  int64_t running_;
};

/// Measures the CPU each slice costs. After the first slices it says whether
/// the call should stop because its cost per slice exceeds the limit (0: never).
class SliceBudget {
 public:
  SliceBudget(const PushbackLimits& requested, const NodeLimits& node)
      : max_slice_cpu_ns_(requested.max_slice_cpu_ns.value_or(node.max_slice_cpu_ns)) {}

  /// Call after each slice; an error with kPushedBack means "stop here".
  arrow::Status AfterSlice();
  int64_t slices() const { return slices_; }

 private:
  static constexpr int64_t kSlicesMeasured = 2;
  int64_t max_slice_cpu_ns_;
  CpuTimer timer_;
  int64_t slices_ = 0;
};

/// An error with kPushedBack if the call should be declined before any work.
arrow::Status DeclineIfBusy(const InFlightCall& call, const PushbackLimits& requested,
                            const NodeLimits& node);

}  // namespace skyhook
