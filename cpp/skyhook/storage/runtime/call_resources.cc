#include "skyhook/storage/runtime/call_resources.h"

#include <algorithm>

#include "skyhook/storage/runtime/decimal_kernels.h"
#include "skyhook/storage/runtime/node_memory.h"
#include "skyhook/storage/runtime/retaining_memory_pool.h"

namespace skyhook {
namespace {

constexpr int64_t kMaxBatchRows = 64 * 1024;
// Rows x expression nodes in one slice. Arrow evaluates every node on every
// row (an IN list as a chain of ORs: ~20 ns a value and row), so a costly
// expression gets smaller slices and the limits are still checked every
// ~0.1 s; 190 IN lists of 1,000 values once took 5 s on a 1,024-row slice.
constexpr int64_t kMaxSliceWork = int64_t{4} << 20;

// Storage's decimal kernels; Arrow's own should they not install (a changed Arrow).
arrow::compute::FunctionRegistry* FunctionRegistry() {
  auto registry = StorageFunctionRegistry();
  return registry.ok() ? *registry : arrow::compute::GetFunctionRegistry();
}

}  // namespace

CallResources::CallResources()
    : limits_(NodeLimits::FromEnvironment()),
      pool_(RetainingMemoryPool::Process(), limits_.max_call_memory_bytes, NodeMemory::Process(),
            limits_.max_node_memory_bytes),
      exec_context_(&pool_, /*executor=*/nullptr, FunctionRegistry()),
      deadline_(std::chrono::steady_clock::now() + std::chrono::milliseconds(limits_.max_call_ms)) {
}

bool CallResources::OutOfTime() const { return std::chrono::steady_clock::now() >= deadline_; }

ResultOptions CallResources::Bounded(ResultOptions requested, int64_t expression_nodes) const {
  // Limits are checked between slices, so a slice's work must stay small.
  requested.batch_size = std::clamp(requested.batch_size, limits_.min_batch_size,
                                    std::max(limits_.min_batch_size, kMaxBatchRows));
  int64_t affordable_rows = kMaxSliceWork / std::max<int64_t>(1, expression_nodes);
  requested.batch_size = std::clamp<int64_t>(affordable_rows, 1, requested.batch_size);
  return requested;
}

}  // namespace skyhook
