// What a node gives one storage call: its limits (read when the call starts),
// an Arrow memory pool capped at them that every allocation of the call goes
// through, the call's deadline, and Arrow's compute context over that pool.
#pragma once

#include <chrono>
#include <cstdint>

#include <arrow/compute/exec.h>
#include <arrow/memory_pool.h>

#include "skyhook/protocol/result_options.h"
#include "skyhook/storage/runtime/capped_memory_pool.h"
#include "skyhook/storage/runtime/node_limits.h"

namespace skyhook {

class CallResources {
 public:
  CallResources();
  CallResources(const CallResources&) = delete;
  CallResources& operator=(const CallResources&) = delete;

  const NodeLimits& limits() const { return limits_; }
  arrow::MemoryPool* pool() { return &pool_; }
  arrow::compute::ExecContext* exec_context() { return &exec_context_; }

  /// True once the call has run for the node's maximum call time.
  bool OutOfTime() const;

  /// The request's result options within the node's limits, for expressions
  /// of `expression_nodes` nodes (filter, projections and measures together).
  ResultOptions Bounded(ResultOptions requested, int64_t expression_nodes) const;

 private:
  NodeLimits limits_;
  CappedMemoryPool pool_;
  arrow::compute::ExecContext exec_context_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace skyhook
