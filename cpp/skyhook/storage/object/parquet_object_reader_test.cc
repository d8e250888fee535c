#include "skyhook/storage/object/parquet_object_reader.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/object_writer.h"
#include "skyhook/testing/designed_object.h"
#include "skyhook/testing/ok.h"

namespace skyhook {
namespace {

// 1,000 rows in row groups of 250: n ascending, text one of 3 values, price a decimal.
std::shared_ptr<arrow::Table> Rows() {
  arrow::Int64Builder n;
  arrow::StringBuilder text;
  arrow::Decimal128Builder price(arrow::decimal128(15, 2));
  for (int64_t row = 0; row < 1000; ++row) {
    EXPECT_TRUE(n.Append(row).ok());
    EXPECT_TRUE(text.Append(std::string(1 + row % 3, 'x')).ok());
    EXPECT_TRUE(price.Append(arrow::Decimal128(row * 101)).ok());
  }
  auto schema = arrow::schema({arrow::field("n", arrow::int64(), false),
                               arrow::field("text", arrow::utf8(), false),
                               arrow::field("price", arrow::decimal128(15, 2), false)});
  return arrow::Table::Make(schema, {Ok(n.Finish()), Ok(text.Finish()), Ok(price.Finish())});
}

class ParquetObject : public testing::Test {
 protected:
  void SetUp() override {
    ObjectDesign request;
    request.format = ObjectFormat::kParquet;
    request.row_group_size = 250;
    request.column_groups = {{{"n", "text", "price"}, 0, 0}};
    encoded_ = Ok(EncodeObject(Rows(), request, arrow::default_memory_pool()));
  }

  std::unique_ptr<ObjectReader> Open(DesignedObject* object) {
    return Ok(ObjectReader::Open(object, arrow::default_memory_pool()));
  }

  static std::shared_ptr<arrow::Table> Table(
      arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> batches) {
    return Ok(Ok(Ok(std::move(batches))->ToTable())->CombineChunks());
  }

  EncodedObject encoded_;
};

TEST_F(ParquetObject, RowGroupsAreItsZones) {
  DesignedObject object(encoded_.data, encoded_.design);
  auto reader = Open(&object);
  EXPECT_EQ(reader->num_rows(), 1000);
  EXPECT_EQ(reader->num_zones(), 4);
  EXPECT_EQ(reader->known_zone_rows(), (std::vector<int64_t>{250, 250, 250, 250}));
  auto zones = Table(reader->ReadZones({0, 2}, 100, {1, 3}));
  auto expected = Rows();
  ASSERT_EQ(zones->num_rows(), 500);
  EXPECT_TRUE(zones->column(0)->Equals(
      *Ok(arrow::ChunkedArray::Make({expected->column(0)->Slice(250, 250)->chunk(0),
                                     expected->column(0)->Slice(750, 250)->chunk(0)}))));
  EXPECT_TRUE(zones->column(1)->Equals(
      *Ok(arrow::ChunkedArray::Make({expected->column(2)->Slice(250, 250)->chunk(0),
                                     expected->column(2)->Slice(750, 250)->chunk(0)}))));
  EXPECT_FALSE(reader->ReadZones({0}, 100, {4}).ok());
}

TEST_F(ParquetObject, ReadsFromARowOnSkipWholeRowGroups) {
  DesignedObject object(encoded_.data, encoded_.design);
  auto reader = Open(&object);
  auto rest = Table(reader->ReadFields({0}, 64, 600));
  ASSERT_EQ(rest->num_rows(), 400);
  EXPECT_EQ(Ok(rest->column(0)->GetScalar(0))->ToString(), "600");
}

TEST_F(ParquetObject, StatedBoundsAreEachRowGroupsMinAndMax) {
  DesignedObject object(encoded_.data, encoded_.design);
  auto reader = Open(&object);
  auto bounds = reader->StatedBounds(0);
  ASSERT_EQ(bounds.size(), 4u);
  for (int zone = 0; zone < 4; ++zone) {
    ASSERT_TRUE(bounds[zone].has_value());
    EXPECT_EQ(bounds[zone]->min->ToString(), std::to_string(zone * 250));
    EXPECT_EQ(bounds[zone]->max->ToString(), std::to_string(zone * 250 + 249));
    EXPECT_EQ(bounds[zone]->null_count, 0);
  }
  EXPECT_TRUE(reader->StatedBounds(7).empty());
}

TEST_F(ParquetObject, ZoneRangesHoldEveryByteAReadOfThemTouches) {
  DesignedObject object(encoded_.data, encoded_.design);
  auto reader = Open(&object);
  auto ranges = reader->ZoneRanges({2}, {1});
  ASSERT_TRUE(ranges.has_value());
  ASSERT_FALSE(ranges->empty());
  object.reads.clear();
  ASSERT_EQ(Table(reader->ReadZones({2}, 100, {1}))->num_rows(), 250);
  for (const auto& [offset, length] : object.reads) {
    bool inside = false;
    for (const auto& [start, span] : *ranges) {
      inside = inside || (offset >= start && offset + length <= start + span);
    }
    EXPECT_TRUE(inside) << "read " << length << " bytes at " << offset << " outside the ranges";
  }
  EXPECT_FALSE(reader->ZoneRanges({9}, {0}).has_value());
}

TEST_F(ParquetObject, ADamagedPageIsACorruptObjectNamingTheDamage) {
  auto ranges = Open(std::make_unique<DesignedObject>(encoded_.data, encoded_.design).get())
                    ->ZoneRanges({0}, {2});
  ASSERT_TRUE(ranges.has_value() && !ranges->empty());
  auto damaged = Ok(arrow::AllocateBuffer(encoded_.data->size()));
  std::memcpy(damaged->mutable_data(), encoded_.data->data(), encoded_.data->size());
  const auto [start, span] = (*ranges)[0];
  damaged->mutable_data()[start + span / 2] ^= 0x10;
  DesignedObject object(std::move(damaged), encoded_.design);
  auto reader = Open(&object);
  auto read = reader->ReadZones({0}, 100, {2});
  auto status = read.ok() ? Ok(std::move(read))->ToTable().status() : read.status();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(CodeOf(status), ErrorCode::kCorruptObject) << status.ToString();
  EXPECT_NE(status.message().find("checksum mismatch"), std::string::npos) << status.ToString();
}

// A decimal(5, 2) column of 1,001 values, the last one `last`: an odd count,
// so that value lies in the tail after the check's vector loop.
arrow::Status ReadDecimalsEndingIn(int64_t last) {
  arrow::Decimal128Builder values(arrow::decimal128(5, 2));
  for (int64_t row = 0; row < 1000; ++row)
    ARROW_RETURN_NOT_OK(values.Append(arrow::Decimal128(row - 500)));
  ARROW_RETURN_NOT_OK(values.Append(arrow::Decimal128(last)));
  auto schema = arrow::schema({arrow::field("d", arrow::decimal128(5, 2), false)});
  auto table = arrow::Table::Make(schema, {Ok(values.Finish())});
  ObjectDesign request;
  request.format = ObjectFormat::kParquet;
  request.column_groups = {{{"d"}, 0, 0}};
  ARROW_ASSIGN_OR_RAISE(auto encoded, EncodeObject(table, request, arrow::default_memory_pool()));
  DesignedObject object(encoded.data, encoded.design);
  ARROW_ASSIGN_OR_RAISE(auto reader, ObjectReader::Open(&object, arrow::default_memory_pool()));
  ARROW_ASSIGN_OR_RAISE(auto batches, reader->ReadFields({0}, 64 * 1024));
  return batches->ToTable().status();
}

TEST(ParquetDecimals, ValuesWithinTheirPrecisionAreRead) {
  EXPECT_TRUE(ReadDecimalsEndingIn(99999).ok());
  EXPECT_TRUE(ReadDecimalsEndingIn(-99999).ok());
  EXPECT_TRUE(ReadDecimalsEndingIn(0).ok());
}

TEST(ParquetDecimals, AValueBeyondItsPrecisionIsACorruptObject) {
  for (int64_t beyond : {100000, -100000, 8000000, -8000000}) {
    auto status = ReadDecimalsEndingIn(beyond);
    ASSERT_FALSE(status.ok()) << beyond;
    EXPECT_EQ(CodeOf(status), ErrorCode::kCorruptObject) << status.ToString();
    EXPECT_NE(status.message().find("exceeds its precision"), std::string::npos)
        << status.ToString();
  }
}

TEST(ParquetObjectOpen, BytesThatAreNotParquetAreCorrupt) {
  ObjectDesign design;
  design.format = ObjectFormat::kParquet;
  auto junk = arrow::Buffer::FromString(std::string(4096, 'j') + "PAR1");
  design.column_groups = {{{"n"}, 0, static_cast<uint64_t>(junk->size())}};
  design.num_rows = 1;
  DesignedObject object(junk, design);
  auto reader = ObjectReader::Open(&object, arrow::default_memory_pool());
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(CodeOf(reader.status()), ErrorCode::kCorruptObject) << reader.status().ToString();
}

}  // namespace
}  // namespace skyhook
