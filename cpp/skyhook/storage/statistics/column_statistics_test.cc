#include "skyhook/storage/statistics/column_statistics.h"

#include <cmath>
#include <limits>

#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

namespace skyhook {
namespace {

std::shared_ptr<arrow::Array> ArrayOf(const std::shared_ptr<arrow::DataType>& type,
                                      const std::string& json) {
  return arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
}

struct Summary {
  std::shared_ptr<arrow::Scalar> min, max;
  int64_t null_count, bytes;
};

// The statistics of `slices` of one column, as Finish reports them.
Summary Of(const std::shared_ptr<arrow::DataType>& type, const std::vector<std::string>& slices) {
  ColumnStatistics statistics(type);
  for (const auto& json : slices) {
    auto status = statistics.Update(ArrayOf(type, json));
    EXPECT_TRUE(status.ok()) << status;
  }
  auto row = statistics.Finish().ValueOrDie();
  EXPECT_EQ(row->length(), 1);
  EXPECT_EQ(row->type()->ToString(),
            arrow::struct_({arrow::field("min", type), arrow::field("max", type),
                            arrow::field("null_count", arrow::int64()),
                            arrow::field("bytes", arrow::int64())})
                ->ToString());
  auto field = [&](int i) { return row->field(i)->GetScalar(0).ValueOrDie(); };
  return {field(0), field(1), static_cast<const arrow::Int64Scalar&>(*field(2)).value,
          static_cast<const arrow::Int64Scalar&>(*field(3)).value};
}

TEST(ColumnStatistics, IntegersWithNullsAcrossSlices) {
  auto summary = Of(arrow::int64(), {"[5, null, 3]", "[null, null]", "[9, -2]"});
  EXPECT_EQ(summary.min->ToString(), "-2");
  EXPECT_EQ(summary.max->ToString(), "9");
  EXPECT_EQ(summary.null_count, 3);
  EXPECT_GT(summary.bytes, 0);
}

TEST(ColumnStatistics, StringsOrderAsBytes) {
  auto summary = Of(arrow::utf8(), {R"(["pear", "apple", null])", R"(["zebra", "Zebra"])"});
  EXPECT_EQ(summary.min->ToString(), "Zebra");
  EXPECT_EQ(summary.max->ToString(), "zebra");
  EXPECT_EQ(summary.null_count, 1);
}

TEST(ColumnStatistics, NaNLeavesNoRange) {
  auto summary = Of(arrow::float64(), {"[1.5, 2.5]", "[NaN, 0.5]"});
  EXPECT_FALSE(summary.min->is_valid);
  EXPECT_FALSE(summary.max->is_valid);
  EXPECT_EQ(summary.null_count, 0);
}

TEST(ColumnStatistics, FloatsWithoutNaNHaveARange) {
  auto summary = Of(arrow::float32(), {"[1.5, -0.0, Inf]"});
  EXPECT_EQ(summary.max->ToString(), "inf");
  EXPECT_EQ(summary.min->ToString(), "-0");
}

TEST(ColumnStatistics, NoValuesLeaveNoRange) {
  auto empty = Of(arrow::int32(), {});
  EXPECT_FALSE(empty.min->is_valid);
  EXPECT_FALSE(empty.max->is_valid);
  EXPECT_EQ(empty.null_count, 0);
  EXPECT_EQ(empty.bytes, 0);
  auto empty_slice = Of(arrow::int32(), {"[]"});
  EXPECT_FALSE(empty_slice.min->is_valid);
  auto all_null = Of(arrow::date32(), {"[null, null]"});
  EXPECT_FALSE(all_null.min->is_valid);
  EXPECT_EQ(all_null.null_count, 2);
}

TEST(ColumnStatistics, UnorderableTypesHaveNoRange) {
  auto summary = Of(arrow::list(arrow::int8()), {"[[1, 2], null, []]"});
  EXPECT_FALSE(summary.min->is_valid);
  EXPECT_FALSE(summary.max->is_valid);
  EXPECT_EQ(summary.null_count, 1);
}

TEST(ColumnStatistics, CountsDecodedBytes) {
  ColumnStatistics statistics(arrow::int64());
  ASSERT_TRUE(statistics.Update(ArrayOf(arrow::int64(), "[1, 2, 3, 4]")).ok());
  EXPECT_EQ(statistics.bytes(), 4 * 8);  // no validity bitmap without nulls
  EXPECT_EQ(statistics.null_count(), 0);
}

}  // namespace
}  // namespace skyhook
