#include "skyhook/storage/object/object_columns.h"

#include <arrow/api.h>
#include <arrow/compute/exec.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

using arrow::TimeUnit;

std::shared_ptr<arrow::RecordBatch> BatchOf(const std::shared_ptr<arrow::DataType>& type,
                                            const std::string& json) {
  auto values = arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
  return arrow::RecordBatch::Make(arrow::schema({arrow::field("x", type)}), values->length(),
                                  {values});
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> Requested(
    const std::shared_ptr<arrow::RecordBatch>& batch,
    const std::shared_ptr<arrow::DataType>& type) {
  arrow::compute::ExecContext context;
  return AsRequested(batch, arrow::schema({arrow::field("x", type)}), &context);
}

TEST(ObjectColumns, ConvertsOnlyExactly) {
  auto zoned = arrow::timestamp(TimeUnit::MILLI, "America/New_York");
  EXPECT_TRUE(ConvertsExactly(*arrow::int32(), *arrow::int32()));
  EXPECT_TRUE(ConvertsExactly(*arrow::dictionary(arrow::int8(), arrow::utf8()), *arrow::utf8()));
  EXPECT_TRUE(ConvertsExactly(*arrow::decimal32(7, 2), *arrow::decimal128(7, 2)));
  EXPECT_TRUE(ConvertsExactly(*zoned, *arrow::timestamp(TimeUnit::MILLI, "UTC")));
  EXPECT_TRUE(ConvertsExactly(*zoned, *arrow::timestamp(TimeUnit::SECOND, "UTC")));
  EXPECT_TRUE(ConvertsExactly(*arrow::time32(TimeUnit::MILLI), *arrow::time32(TimeUnit::SECOND)));
  EXPECT_TRUE(ConvertsExactly(*arrow::date32(), *arrow::date64()));
  EXPECT_TRUE(ConvertsExactly(*arrow::duration(TimeUnit::NANO), *arrow::int64()));
  EXPECT_TRUE(ConvertsExactly(*arrow::decimal256(50, 2), *arrow::fixed_size_binary(32)));
  // Widening, narrowing, other zones and other values are refused.
  EXPECT_FALSE(ConvertsExactly(*arrow::int32(), *arrow::int64()));
  EXPECT_FALSE(ConvertsExactly(*arrow::decimal32(7, 2), *arrow::decimal128(8, 2)));
  EXPECT_FALSE(ConvertsExactly(*arrow::timestamp(TimeUnit::MILLI),
                               *arrow::timestamp(TimeUnit::MILLI, "UTC")));
  EXPECT_FALSE(ConvertsExactly(*zoned, *arrow::timestamp(TimeUnit::MILLI, "Europe/Paris")));
  EXPECT_FALSE(
      ConvertsExactly(*arrow::timestamp(TimeUnit::SECOND), *arrow::timestamp(TimeUnit::MILLI)));
  EXPECT_FALSE(ConvertsExactly(*arrow::dictionary(arrow::int8(), arrow::utf8()), *arrow::binary()));
  EXPECT_FALSE(ConvertsExactly(*arrow::int64(), *arrow::duration(TimeUnit::NANO)));
  EXPECT_FALSE(ConvertsExactly(*arrow::decimal128(30, 2), *arrow::fixed_size_binary(16)));
}

TEST(ObjectColumns, FindObjectFieldNamesTheMismatch) {
  auto schema = arrow::schema({arrow::field("x", arrow::int32())});
  EXPECT_EQ(*FindObjectField(*schema, *arrow::field("x", arrow::int32())), 0);
  EXPECT_EQ(CodeOf(FindObjectField(*schema, *arrow::field("x", arrow::utf8())).status()),
            ErrorCode::kTypeMismatch);
  EXPECT_EQ(CodeOf(FindObjectField(*schema, *arrow::field("y", arrow::int32())).status()),
            ErrorCode::kUnknownColumn);
}

TEST(ObjectColumns, OneColumnHasOneRequestedType) {
  RequestedColumns columns(arrow::schema({arrow::field("x", arrow::time32(TimeUnit::MILLI))}));
  ASSERT_TRUE(columns.Add(*arrow::field("x", arrow::time32(TimeUnit::SECOND))).ok());
  EXPECT_EQ(CodeOf(columns.Add(*arrow::field("x", arrow::time32(TimeUnit::MILLI)))),
            ErrorCode::kTypeMismatch);
  columns.AddAll();  // keeps the type the request named
  EXPECT_TRUE(columns.schema()->field(0)->type()->Equals(*arrow::time32(TimeUnit::SECOND)));
  EXPECT_EQ(columns.indices(), std::vector<int>{0});
}

TEST(ObjectColumns, ConvertsValues) {
  auto seconds = Requested(BatchOf(arrow::time32(TimeUnit::MILLI), "[3000, null]"),
                           arrow::time32(TimeUnit::SECOND));
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_TRUE((*seconds)->column(0)->Equals(
      *arrow::json::ArrayFromJSONString(arrow::time32(TimeUnit::SECOND), "[3, null]")
           .ValueOrDie()));
  auto bytes = Requested(BatchOf(arrow::duration(TimeUnit::SECOND), "[-5, null]"), arrow::int64());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_TRUE((*bytes)->column(0)->Equals(
      *arrow::json::ArrayFromJSONString(arrow::int64(), "[-5, null]").ValueOrDie()));
  auto same = BatchOf(arrow::int32(), "[1]");
  EXPECT_EQ(*Requested(same, arrow::int32()), same);  // nothing to convert: the same batch
}

TEST(ObjectColumns, RefusesWhatDoesNotConvertExactly) {
  // Milliseconds a hostile object holds that are not whole seconds.
  auto lossy =
      Requested(BatchOf(arrow::time32(TimeUnit::MILLI), "[1500]"), arrow::time32(TimeUnit::SECOND));
  EXPECT_EQ(CodeOf(lossy.status()), ErrorCode::kTypeMismatch);
  arrow::compute::ExecContext context;
  auto batch = BatchOf(arrow::int32(), "[1]");
  auto two = arrow::schema({arrow::field("x", arrow::int32()), arrow::field("y", arrow::int32())});
  EXPECT_FALSE(AsRequested(batch, two, &context).ok());
}

}  // namespace
}  // namespace skyhook
