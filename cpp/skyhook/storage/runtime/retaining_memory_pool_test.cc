#include "skyhook/storage/runtime/retaining_memory_pool.h"

#include <cstring>

#include <gtest/gtest.h>

namespace skyhook {
namespace {

constexpr int64_t kLarge = 200 * 1024;

TEST(RetainingMemoryPool, RoundsLargeSizesUpByAtMostAnEighth) {
  EXPECT_EQ(RetainingMemoryPool::BlockBytes(1000), 1000);
  EXPECT_EQ(RetainingMemoryPool::BlockBytes(64 * 1024), 64 * 1024);
  for (int64_t size :
       {int64_t{65537}, kLarge, int64_t{1} << 20, (int64_t{1} << 20) + 1, int64_t{3} << 29}) {
    const int64_t block = RetainingMemoryPool::BlockBytes(size);
    EXPECT_GE(block, size);
    EXPECT_LE(block, size + size / 8);
    EXPECT_EQ(RetainingMemoryPool::BlockBytes(block), block);
  }
}

TEST(RetainingMemoryPool, HandsAFreedLargeBlockToTheNextAllocationOfItsClass) {
  RetainingMemoryPool pool(arrow::default_memory_pool(), 1 << 20);
  uint8_t* first = nullptr;
  ASSERT_TRUE(pool.Allocate(kLarge, 64, &first).ok());
  pool.Free(first, kLarge, 64);
  EXPECT_EQ(pool.retained_bytes(), RetainingMemoryPool::BlockBytes(kLarge));
  uint8_t* second = nullptr;
  ASSERT_TRUE(pool.Allocate(kLarge - 100, 64, &second).ok());  // same class
  EXPECT_EQ(second, first);
  EXPECT_EQ(pool.retained_bytes(), 0);
  pool.Free(second, kLarge - 100, 64);
}

TEST(RetainingMemoryPool, KeepsNoMoreThanItsLimit) {
  RetainingMemoryPool pool(arrow::default_memory_pool(), 2 * kLarge);
  std::vector<uint8_t*> blocks(4);
  for (auto& block : blocks) ASSERT_TRUE(pool.Allocate(kLarge, 64, &block).ok());
  for (auto* block : blocks) pool.Free(block, kLarge, 64);
  EXPECT_LE(pool.retained_bytes(), 2 * kLarge);
  EXPECT_GT(pool.retained_bytes(), 0);
}

TEST(RetainingMemoryPool, ReallocationKeepsTheBytesAcrossClassesAndSmallSizes) {
  RetainingMemoryPool pool(arrow::default_memory_pool(), 1 << 20);
  uint8_t* data = nullptr;
  ASSERT_TRUE(pool.Allocate(1000, 64, &data).ok());
  std::memset(data, 7, 1000);
  int64_t old_size = 1000;
  for (int64_t size : {kLarge, kLarge + 10, int64_t{4} << 20, int64_t{500}}) {
    ASSERT_TRUE(pool.Reallocate(old_size, size, 64, &data).ok());
    for (int64_t i = 0; i < 500; ++i) ASSERT_EQ(data[i], 7);
    old_size = size;
  }
  pool.Free(data, 500, 64);
}

}  // namespace
}  // namespace skyhook
