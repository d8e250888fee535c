#include "skyhook/storage/object/dictionary_indices.h"

#include <vector>

#include <gtest/gtest.h>

namespace skyhook {
namespace {

TEST(DictionaryIndices, IndicesBelowRejectsNegativeAndTooLargeIndices) {
  const std::vector<int32_t> inside{0, 3, 1};
  EXPECT_TRUE(IndicesBelow(inside.data(), 3, 4));
  EXPECT_FALSE(IndicesBelow(inside.data(), 3, 3));
  const std::vector<int32_t> negative{0, -1};
  EXPECT_FALSE(IndicesBelow(negative.data(), 2, 4));
  EXPECT_TRUE(IndicesBelow(negative.data(), 1, 4));  // only the first count
  const std::vector<int64_t> wide{int64_t{1} << 40};
  EXPECT_FALSE(IndicesBelow(wide.data(), 1, 4));
  const std::vector<int8_t> narrow{-128};
  EXPECT_FALSE(IndicesBelow(narrow.data(), 1, 200));
  EXPECT_TRUE(IndicesBelow(narrow.data(), 0, 0));  // nothing to check, empty dictionary
}

}  // namespace
}  // namespace skyhook
