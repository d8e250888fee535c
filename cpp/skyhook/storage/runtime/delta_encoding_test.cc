#include "skyhook/storage/runtime/delta_encoding.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <arrow/api.h>
#include <gtest/gtest.h>

namespace skyhook {
namespace {

// `values`, then its last value repeated up to the rows the encoder needs.
template <typename ArrowType>
std::shared_ptr<arrow::Array> Column(std::vector<typename ArrowType::c_type> values,
                                     int64_t rows = kMinDeltaRows) {
  values.resize(rows, values.back());
  arrow::NumericBuilder<ArrowType> builder;
  EXPECT_TRUE(builder.AppendValues(values).ok());
  return builder.Finish().ValueOrDie();
}

// Differences as the encoder writes them: `head`, then zeros for the repeats.
template <typename ArrowType>
std::shared_ptr<arrow::Array> Differences(std::vector<typename ArrowType::c_type> head) {
  head.resize(kMinDeltaRows, 0);
  return Column<ArrowType>(head);
}

std::shared_ptr<arrow::RecordBatch> Batch(const arrow::ArrayVector& columns) {
  arrow::FieldVector fields;
  for (size_t i = 0; i < columns.size(); ++i) {
    fields.push_back(arrow::field("c" + std::to_string(i), columns[i]->type()));
  }
  return arrow::RecordBatch::Make(arrow::schema(fields), columns[0]->length(), columns);
}

DeltaEncodedBatch Encoded(const arrow::ArrayVector& columns) {
  auto encoded = DeltaEncodeSortedIntegers(*Batch(columns), arrow::default_memory_pool());
  EXPECT_TRUE(encoded.ok()) << encoded.status().ToString();
  return encoded.ValueOrDie();
}

TEST(DeltaEncoding, EncodesSortedIntegerColumnsOnly) {
  auto unsorted = Column<arrow::Int64Type>({5, 4, 7, 10});
  auto doubles = Column<arrow::DoubleType>({1, 2, 3, 4});
  auto encoded = Encoded({Column<arrow::Int64Type>({5, 5, 7, 10}), unsorted, doubles,
                          Column<arrow::UInt8Type>({0, 1, 200, 255})});
  EXPECT_EQ(encoded.columns, "0,3");
  EXPECT_TRUE(encoded.batch->column(0)->Equals(*Differences<arrow::Int64Type>({5, 0, 2, 3})));
  EXPECT_TRUE(encoded.batch->column(1)->Equals(*unsorted));
  EXPECT_TRUE(encoded.batch->column(2)->Equals(*doubles));
  EXPECT_TRUE(encoded.batch->column(3)->Equals(*Differences<arrow::UInt8Type>({0, 1, 199, 55})));
}

TEST(DeltaEncoding, WrapsAcrossTheWholeRangeWithoutOverflow) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr uint64_t kTop = std::numeric_limits<uint64_t>::max();
  auto encoded =
      Encoded({Column<arrow::Int64Type>({kMin, -1, kMax}), Column<arrow::UInt64Type>({0, 1, kTop}),
               Column<arrow::Int8Type>({-128, 0, 127})});
  EXPECT_EQ(encoded.columns, "0,1,2");
  // kMax - (-1) wraps to kMin; a cumulative sum that wraps restores it.
  EXPECT_TRUE(encoded.batch->column(0)->Equals(*Differences<arrow::Int64Type>({kMin, kMax, kMin})));
  EXPECT_TRUE(encoded.batch->column(1)->Equals(*Differences<arrow::UInt64Type>({0, 1, kTop - 1})));
  EXPECT_TRUE(encoded.batch->column(2)->Equals(*Differences<arrow::Int8Type>({-128, -128, 127})));
}

TEST(DeltaEncoding, LeavesNullsAndShortBatchesAlone) {
  arrow::Int32Builder with_null;
  ASSERT_TRUE(with_null.AppendNull().ok());
  ASSERT_TRUE(with_null.AppendValues(std::vector<int32_t>(kMinDeltaRows, 1)).ok());
  auto nulls = Encoded({with_null.Finish().ValueOrDie()});
  EXPECT_EQ(nulls.batch, nullptr);
  EXPECT_EQ(nulls.columns, "");
  EXPECT_EQ(Encoded({Column<arrow::Int16Type>({1, 2}, kMinDeltaRows - 1)}).batch, nullptr);
  EXPECT_EQ(Encoded({Column<arrow::Int16Type>({7}, 0)}).batch, nullptr);
}

TEST(DeltaEncoding, EncodesASliceFromItsOffset) {
  auto slice = Column<arrow::Int32Type>({9, 1, 2, 4}, kMinDeltaRows + 1)->Slice(1);
  auto encoded = Encoded({slice});
  EXPECT_TRUE(encoded.batch->column(0)->Equals(*Differences<arrow::Int32Type>({1, 1, 2})));
}

}  // namespace
}  // namespace skyhook
