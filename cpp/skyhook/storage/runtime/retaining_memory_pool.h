// An Arrow memory pool that keeps large freed blocks for the next storage
// calls instead of giving them back to the allocator. The embedded store's
// pool (mimalloc) returns freed memory to the OS within ~10 ms, so every call
// decoded into fresh pages the kernel had to fault in and zero: ~4x the page
// faults, and Q1's storage CPU was 1.19x what it is with the pages kept.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <arrow/memory_pool.h>

namespace skyhook {

class RetainingMemoryPool : public arrow::MemoryPool {
 public:
  /// Blocks from this size up are kept, rounded up to size classes.
  static constexpr int64_t kMinBlockBytes = 64 * 1024;
  RetainingMemoryPool(arrow::MemoryPool* base, int64_t max_retained_bytes)
      : base_(base), max_retained_(max_retained_bytes) {}

  /// The process's pool over Arrow's default one, keeping at most the node's
  /// SKYHOOK_RETAINED_MEMORY_MB (never destroyed: buffers may be freed while
  /// the process exits).
  static RetainingMemoryPool* Process();

  /// The bytes a block for an allocation of `size` takes: sizes from
  /// kMinBlockBytes up round up to an eighth of their power of two.
  static int64_t BlockBytes(int64_t size);

  arrow::Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override;
  arrow::Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                           uint8_t** ptr) override;
  void Free(uint8_t* buffer, int64_t size, int64_t alignment) override;

  int64_t retained_bytes() const;
  // What the base pool holds, the kept blocks included.
  int64_t bytes_allocated() const override { return base_->bytes_allocated(); }
  int64_t total_bytes_allocated() const override { return base_->total_bytes_allocated(); }
  int64_t num_allocations() const override { return base_->num_allocations(); }
  std::string backend_name() const override { return base_->backend_name(); }

 private:
  static bool Kept(int64_t size, int64_t alignment);

  arrow::MemoryPool* base_;
  const int64_t max_retained_;
  mutable std::mutex mutex_;
  std::unordered_map<int64_t, std::vector<uint8_t*>> free_blocks_;  // by block bytes
  int64_t retained_ = 0;
};

}  // namespace skyhook
