// An Arrow memory pool that refuses allocations past a cap: everything one
// storage call allocates through Arrow (decoding, compute, Acero's hash
// tables, the reply) goes through one, so a call cannot grow a node's memory
// past the node's limit, whatever the object or the request; nor can the
// node's calls together pass the node's own (node_memory.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <arrow/memory_pool.h>

#include "skyhook/storage/runtime/node_memory.h"

namespace skyhook {

class CappedMemoryPool : public arrow::MemoryPool {
 public:
  /// Caps the call at `cap` bytes and its node at `node_cap`, counted in `node`.
  CappedMemoryPool(arrow::MemoryPool* base, int64_t cap, NodeMemory* node, int64_t node_cap)
      : base_(base), cap_(cap), node_(node), node_cap_(node_cap) {}

  arrow::Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override;
  arrow::Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                           uint8_t** ptr) override;
  void Free(uint8_t* buffer, int64_t size, int64_t alignment) override;

  int64_t bytes_allocated() const override { return allocated_.load(); }
  int64_t max_memory() const override { return peak_.load(); }
  int64_t total_bytes_allocated() const override { return total_.load(); }
  int64_t num_allocations() const override { return allocations_.load(); }
  std::string backend_name() const override { return base_->backend_name(); }

 private:
  arrow::Status Reserve(int64_t size);
  void Unreserve(int64_t size);

  arrow::MemoryPool* base_;
  int64_t cap_;
  NodeMemory* node_;
  int64_t node_cap_;
  std::atomic<int64_t> allocated_{0}, peak_{0}, total_{0}, allocations_{0};
};

}  // namespace skyhook
