// The memory all storage calls of one node hold together (an OSD, or the
// embedded store's process). Each call is capped on its own
// (SKYHOOK_MAX_CALL_MEMORY_MB), but an OSD runs a call on every op thread at
// once: without a shared bound, a workload of many large calls could take
// 16 x the call limit from the node's other tenants.
#pragma once

#include <atomic>
#include <cstdint>

#include <arrow/status.h>

namespace skyhook {

class NodeMemory {
 public:
  /// The process's account (never destroyed: buffers may be freed while the process exits).
  static NodeMemory* Process();

  /// Counts `size` more bytes held (a negative size: fewer), refusing with
  /// kLimitExceeded an increase that would take the node past `limit` bytes.
  arrow::Status Reserve(int64_t size, int64_t limit);
  void Release(int64_t size) { held_.fetch_sub(size); }
  int64_t held() const { return held_.load(); }

 private:
  std::atomic<int64_t> held_{0};
};

}  // namespace skyhook
