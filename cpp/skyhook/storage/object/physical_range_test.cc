#include "skyhook/storage/object/physical_range.h"

#include <vector>

#include <gtest/gtest.h>

namespace skyhook {
namespace {

TEST(PhysicalRange, KeepTableDecidesEachDictionaryValueOnceAndNeverKeepsNulls) {
  const std::vector<int64_t> dictionary{5, -3, 7, 10, 6};
  PhysicalRange range;
  range.low = 5;
  range.high = 7;
  range.excluded = {6};
  EXPECT_EQ(KeepTable(dictionary.data(), 5, range), (std::vector<uint8_t>{1, 0, 1, 0, 0, 0}));
  EXPECT_EQ(KeepTable(dictionary.data(), 0, range), (std::vector<uint8_t>{0}));  // nulls only
  const std::vector<int64_t> extremes{INT64_MIN, INT64_MAX};
  EXPECT_EQ(KeepTable(extremes.data(), 2, PhysicalRange{}), (std::vector<uint8_t>{1, 1, 0}));
}

TEST(PhysicalRange, KeepByIndexNarrowsRowsByTheirValuesEntry) {
  const std::vector<int64_t> dictionary{1, 2, 3};
  PhysicalRange range;
  range.low = 2;
  const auto table = KeepTable(dictionary.data(), 3, range);
  const std::vector<int32_t> indices{0, 1, 2, 3, 2, 1};  // 3: a null row
  std::vector<uint8_t> keep{1, 1, 1, 1, 0, 1};
  KeepByIndex(indices.data(), 6, table.data(), keep.data());
  EXPECT_EQ(keep, (std::vector<uint8_t>{0, 1, 1, 0, 0, 1}));
}

TEST(PhysicalRange, KeepValuesMatchesTheRangeOnEveryValue) {
  const std::vector<int64_t> values{INT64_MIN, -1, 0, 1, 2, INT64_MAX};
  PhysicalRange range;
  range.low = -1;
  range.high = 2;
  range.excluded = {0, 2};
  std::vector<uint8_t> keep(values.size(), 1);
  KeepValues(values.data(), 6, range, keep.data());
  EXPECT_EQ(keep, (std::vector<uint8_t>{0, 1, 0, 1, 0, 0}));
}

}  // namespace
}  // namespace skyhook
