#include "skyhook/storage/runtime/call_resources.h"

#include <gtest/gtest.h>

namespace skyhook {
namespace {

ResultOptions Asking(int64_t batch_size) {
  ResultOptions options;
  options.batch_size = batch_size;
  return options;
}

TEST(CallResources, KeepsBatchesOfCheapExpressionsWithinTheNodeRange) {
  CallResources resources;
  EXPECT_EQ(resources.Bounded(Asking(1 << 20), 3).batch_size, 64 * 1024);
  EXPECT_EQ(resources.Bounded(Asking(1), 3).batch_size, resources.limits().min_batch_size);
  EXPECT_EQ(resources.Bounded(Asking(4096), 0).batch_size, 4096);
}

TEST(CallResources, ShrinksSlicesAsExpressionsGrowCostly) {
  CallResources resources;
  auto two_thousand_values = resources.Bounded(Asking(64 * 1024), 2000).batch_size;
  EXPECT_LT(two_thousand_values, 64 * 1024);
  EXPECT_GT(two_thousand_values, 1000);
  // Below the node's minimum batch: the work bound wins.
  auto largest_request = resources.Bounded(Asking(64 * 1024), 200'000).batch_size;
  EXPECT_LT(largest_request, resources.limits().min_batch_size);
  EXPECT_GE(largest_request, 1);
  EXPECT_EQ(resources.Bounded(Asking(64 * 1024), int64_t{1} << 40).batch_size, 1);
}

}  // namespace
}  // namespace skyhook
