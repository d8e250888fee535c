#include "skyhook/storage/runtime/capped_memory_pool.h"

#include "skyhook/errors/error.h"

namespace skyhook {

arrow::Status CappedMemoryPool::Reserve(int64_t size) {
  // Compared before it is added, as NodeMemory::Reserve: a huge size cannot wrap the count.
  int64_t now = allocated_.load();
  do {
    if (size > 0 && size > cap_ - now) {
      return Error(ErrorCode::kLimitExceeded, "the call needs more than the node's limit of ",
                   cap_ >> 20, " MiB of memory");
    }
  } while (!allocated_.compare_exchange_weak(now, now + size));
  now += size;
  auto node = node_->Reserve(size, node_cap_);
  if (!node.ok()) {
    allocated_.fetch_sub(size);
    return node;
  }
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  return arrow::Status::OK();
}

arrow::Status CappedMemoryPool::Allocate(int64_t size, int64_t alignment, uint8_t** out) {
  ARROW_RETURN_NOT_OK(Reserve(size));
  auto status = base_->Allocate(size, alignment, out);
  if (!status.ok()) {
    Unreserve(size);
    return status;
  }
  total_ += size;
  ++allocations_;
  return status;
}

arrow::Status CappedMemoryPool::Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                                           uint8_t** ptr) {
  ARROW_RETURN_NOT_OK(Reserve(new_size - old_size));
  auto status = base_->Reallocate(old_size, new_size, alignment, ptr);
  if (!status.ok()) {
    Unreserve(new_size - old_size);
    return status;
  }
  if (new_size > old_size) total_ += new_size - old_size;
  return status;
}

void CappedMemoryPool::Free(uint8_t* buffer, int64_t size, int64_t alignment) {
  base_->Free(buffer, size, alignment);
  Unreserve(size);
}

void CappedMemoryPool::Unreserve(int64_t size) {
  allocated_.fetch_sub(size);
  node_->Release(size);
}

}  // namespace skyhook
