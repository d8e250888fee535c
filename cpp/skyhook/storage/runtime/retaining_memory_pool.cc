#include "skyhook/storage/runtime/retaining_memory_pool.h"

#include <algorithm>
#include <cstring>

#include <sanitizer/asan_interface.h>

#include "skyhook/storage/runtime/node_limits.h"

namespace skyhook {
namespace {

// Kept blocks are allocated at this alignment whatever was asked (Arrow asks
// for 64), so any of them serves any request up to it.
constexpr int64_t kBlockAlignment = 64;

}  // namespace

RetainingMemoryPool* RetainingMemoryPool::Process() {
  static auto* pool = new RetainingMemoryPool(arrow::default_memory_pool(),
                                              NodeLimits::FromEnvironment().retained_memory_bytes);
  return pool;
}

int64_t RetainingMemoryPool::BlockBytes(int64_t size) {
  if (size < kMinBlockBytes) return size;
  int64_t power = kMinBlockBytes;
  while (power <= size / 2) power *= 2;  // the largest power of two <= size
  const int64_t step = power / 8;
  return (size + step - 1) / step * step;
}

bool RetainingMemoryPool::Kept(int64_t size, int64_t alignment) {
  constexpr int64_t kMaxBlockBytes = int64_t{1} << 40;  // rounding up cannot overflow
  return size >= kMinBlockBytes && size <= kMaxBlockBytes && alignment <= kBlockAlignment;
}

arrow::Status RetainingMemoryPool::Allocate(int64_t size, int64_t alignment, uint8_t** out) {
  if (!Kept(size, alignment)) {
    ARROW_RETURN_NOT_OK(base_->Allocate(size, alignment, out));
  } else {
    const int64_t block = BlockBytes(size);
    *out = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto found = free_blocks_.find(block);
      if (found != free_blocks_.end() && !found->second.empty()) {
        *out = found->second.back();
        found->second.pop_back();
        retained_ -= block;
      }
    }
    if (*out != nullptr) {
      ASAN_UNPOISON_MEMORY_REGION(*out, block);
    } else {
      ARROW_RETURN_NOT_OK(base_->Allocate(block, kBlockAlignment, out));
    }
  }
  return arrow::Status::OK();
}

arrow::Status RetainingMemoryPool::Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                                              uint8_t** ptr) {
  const bool old_kept = Kept(old_size, alignment), new_kept = Kept(new_size, alignment);
  if (!old_kept && !new_kept) {
    return base_->Reallocate(old_size, new_size, alignment, ptr);
  }
  if (old_kept && new_kept && BlockBytes(old_size) == BlockBytes(new_size)) {
    return arrow::Status::OK();  // the block already holds it
  }
  uint8_t* moved = nullptr;
  ARROW_RETURN_NOT_OK(Allocate(new_size, alignment, &moved));
  std::memcpy(moved, *ptr, static_cast<size_t>(std::min(old_size, new_size)));
  Free(*ptr, old_size, alignment);
  *ptr = moved;
  return arrow::Status::OK();
}

void RetainingMemoryPool::Free(uint8_t* buffer, int64_t size, int64_t alignment) {
  if (!Kept(size, alignment)) {
    base_->Free(buffer, size, alignment);
    return;
  }
  const int64_t block = BlockBytes(size);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (retained_ + block <= max_retained_) {
      free_blocks_[block].push_back(buffer);
      retained_ += block;
      ASAN_POISON_MEMORY_REGION(buffer, block);  // a use after free stays one
      return;
    }
  }
  base_->Free(buffer, block, kBlockAlignment);
}

int64_t RetainingMemoryPool::retained_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return retained_;
}

}  // namespace skyhook
