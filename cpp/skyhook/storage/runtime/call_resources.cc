#include "skyhook/storage/runtime/call_resources.h"

#include <algorithm>

namespace skyhook {
namespace {

constexpr int64_t kMaxBatchRows = 64 * 1024;

}  // namespace

CallResources::CallResources()
    : limits_(NodeLimits::FromEnvironment()),
      pool_(arrow::default_memory_pool(), limits_.max_call_memory_bytes),
      exec_context_(&pool_),
      deadline_(std::chrono::steady_clock::now() + std::chrono::milliseconds(limits_.max_call_ms)) {
}

bool CallResources::OutOfTime() const { return std::chrono::steady_clock::now() >= deadline_; }

ResultOptions CallResources::Bounded(ResultOptions requested) const {
  // Limits are checked between slices, so a slice's work must stay small.
  requested.batch_size = std::clamp(requested.batch_size, limits_.min_batch_size,
                                    std::max(limits_.min_batch_size, kMaxBatchRows));
  return requested;
}

}  // namespace skyhook
