#include "skyhook/storage/runtime/delta_encoding.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <arrow/api.h>
#include <gtest/gtest.h>

namespace skyhook {
namespace {

template <typename ArrowType>
std::shared_ptr<arrow::Array> Column(const std::vector<typename ArrowType::c_type>& values) {
  arrow::NumericBuilder<ArrowType> builder;
  EXPECT_TRUE(builder.AppendValues(values).ok());
  return builder.Finish().ValueOrDie();
}

std::shared_ptr<arrow::RecordBatch> Batch(const arrow::ArrayVector& columns) {
  arrow::FieldVector fields;
  for (size_t i = 0; i < columns.size(); ++i) {
    fields.push_back(arrow::field("c" + std::to_string(i), columns[i]->type()));
  }
  return arrow::RecordBatch::Make(arrow::schema(fields), columns[0]->length(), columns);
}

TEST(DeltaEncoding, EncodesSortedIntegerColumnsOnly) {
  auto sorted = Column<arrow::Int64Type>({5, 5, 7, 10});
  auto unsorted = Column<arrow::Int64Type>({5, 4, 7, 10});
  auto doubles = Column<arrow::DoubleType>({1, 2, 3, 4});
  auto small = Column<arrow::UInt8Type>({0, 1, 200, 255});
  auto encoded = DeltaEncodeSortedIntegers(*Batch({sorted, unsorted, doubles, small}),
                                           arrow::default_memory_pool());
  ASSERT_TRUE(encoded.ok());
  EXPECT_EQ(encoded->columns, "0,3");
  EXPECT_TRUE(encoded->batch->column(0)->Equals(*Column<arrow::Int64Type>({5, 0, 2, 3})));
  EXPECT_TRUE(encoded->batch->column(1)->Equals(*unsorted));
  EXPECT_TRUE(encoded->batch->column(2)->Equals(*doubles));
  EXPECT_TRUE(encoded->batch->column(3)->Equals(*Column<arrow::UInt8Type>({0, 1, 199, 55})));
}

TEST(DeltaEncoding, WrapsAcrossTheWholeRangeWithoutOverflow) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr uint64_t kTop = std::numeric_limits<uint64_t>::max();
  auto encoded = DeltaEncodeSortedIntegers(
      *Batch({Column<arrow::Int64Type>({kMin, -1, kMax}), Column<arrow::UInt64Type>({0, 1, kTop})}),
      arrow::default_memory_pool());
  ASSERT_TRUE(encoded.ok());
  EXPECT_EQ(encoded->columns, "0,1");
  // kMax - (-1) wraps to kMin; a cumulative sum that wraps restores it.
  EXPECT_TRUE(encoded->batch->column(0)->Equals(*Column<arrow::Int64Type>({kMin, kMax, kMin})));
  EXPECT_TRUE(encoded->batch->column(1)->Equals(*Column<arrow::UInt64Type>({0, 1, kTop - 1})));
}

TEST(DeltaEncoding, LeavesNullsSlicesAndShortColumnsAlone) {
  arrow::Int32Builder with_null;
  ASSERT_TRUE(with_null.AppendValues({1, 2}).ok());
  ASSERT_TRUE(with_null.AppendNull().ok());
  auto nulls = with_null.Finish().ValueOrDie();
  auto none = DeltaEncodeSortedIntegers(*Batch({nulls}), arrow::default_memory_pool());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->batch, nullptr);
  EXPECT_EQ(none->columns, "");
  auto one_row = DeltaEncodeSortedIntegers(*Batch({Column<arrow::Int16Type>({7})}),
                                           arrow::default_memory_pool());
  ASSERT_TRUE(one_row.ok());
  EXPECT_EQ(one_row->batch, nullptr);
  // A slice is encoded from its offset: sorted from there on.
  auto slice = Column<arrow::Int32Type>({9, 1, 2, 4})->Slice(1);
  auto sliced = DeltaEncodeSortedIntegers(*Batch({slice}), arrow::default_memory_pool());
  ASSERT_TRUE(sliced.ok());
  EXPECT_TRUE(sliced->batch->column(0)->Equals(*Column<arrow::Int32Type>({1, 1, 2})));
}

}  // namespace
}  // namespace skyhook
