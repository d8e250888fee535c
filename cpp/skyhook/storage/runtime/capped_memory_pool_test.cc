#include "skyhook/storage/runtime/capped_memory_pool.h"

#include <gtest/gtest.h>

#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

constexpr int64_t kKiB = 1024;

TEST(CappedMemoryPool, RefusesACallPastItsOwnCap) {
  NodeMemory node;
  CappedMemoryPool pool(arrow::default_memory_pool(), 64 * kKiB, &node, 1024 * kKiB);
  uint8_t* first = nullptr;
  ASSERT_TRUE(pool.Allocate(48 * kKiB, 64, &first).ok());
  uint8_t* second = nullptr;
  auto refused = pool.Allocate(32 * kKiB, 64, &second);
  EXPECT_EQ(CodeOf(refused), ErrorCode::kLimitExceeded);
  EXPECT_NE(refused.message().find("the call needs more"), std::string::npos);
  EXPECT_EQ(pool.bytes_allocated(), 48 * kKiB);
  EXPECT_EQ(node.held(), 48 * kKiB);
  pool.Free(first, 48 * kKiB, 64);
  EXPECT_EQ(node.held(), 0);
}

TEST(CappedMemoryPool, CallsTogetherStayWithinTheNodeCap) {
  NodeMemory node;
  CappedMemoryPool one(arrow::default_memory_pool(), 256 * kKiB, &node, 128 * kKiB);
  CappedMemoryPool other(arrow::default_memory_pool(), 96 * kKiB, &node, 128 * kKiB);
  uint8_t* held = nullptr;
  ASSERT_TRUE(one.Allocate(80 * kKiB, 64, &held).ok());
  uint8_t* refused_block = nullptr;
  auto refused = other.Allocate(64 * kKiB, 64, &refused_block);  // within its own cap
  EXPECT_EQ(CodeOf(refused), ErrorCode::kLimitExceeded);
  EXPECT_NE(refused.message().find("the node's calls together"), std::string::npos);
  EXPECT_EQ(other.bytes_allocated(), 0);
  EXPECT_EQ(node.held(), 80 * kKiB);
  // A refused growth keeps the block and the counts as they were.
  auto grown = one.Reallocate(80 * kKiB, 160 * kKiB, 64, &held);
  EXPECT_NE(grown.message().find("the node's calls together"), std::string::npos);
  EXPECT_EQ(node.held(), 80 * kKiB);
  ASSERT_TRUE(one.Reallocate(80 * kKiB, 16 * kKiB, 64, &held).ok());  // shrinking always passes
  EXPECT_EQ(node.held(), 16 * kKiB);
  uint8_t* admitted = nullptr;
  ASSERT_TRUE(
      other.Allocate(64 * kKiB, 64, &admitted).ok());  // room once the first call gave some back
  EXPECT_EQ(node.held(), 80 * kKiB);
  one.Free(held, 16 * kKiB, 64);
  other.Free(admitted, 64 * kKiB, 64);
  EXPECT_EQ(node.held(), 0);
}

TEST(CappedMemoryPool, AHugeRequestIsRefusedWithoutWrappingTheCounts) {
  NodeMemory node;
  CappedMemoryPool pool(arrow::default_memory_pool(), 64 * kKiB, &node, 128 * kKiB);
  uint8_t* held = nullptr;
  ASSERT_TRUE(pool.Allocate(16 * kKiB, 64, &held).ok());
  uint8_t* huge = nullptr;
  EXPECT_EQ(CodeOf(pool.Allocate(INT64_MAX - 8, 64, &huge)), ErrorCode::kLimitExceeded);
  EXPECT_EQ(CodeOf(node.Reserve(INT64_MAX - 8, 128 * kKiB)), ErrorCode::kLimitExceeded);
  EXPECT_EQ(pool.bytes_allocated(), 16 * kKiB);
  EXPECT_EQ(node.held(), 16 * kKiB);
  pool.Free(held, 16 * kKiB, 64);
}

}  // namespace
}  // namespace skyhook
