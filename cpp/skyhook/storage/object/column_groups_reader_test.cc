#include "skyhook/storage/object/column_groups_reader.h"

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/object_file.h"
#include "skyhook/storage/object/object_writer.h"
#include "skyhook/testing/designed_object.h"
#include "skyhook/testing/ok.h"

namespace skyhook {
namespace {

std::shared_ptr<arrow::Table> Numbers(int64_t rows) {
  arrow::Int64Builder a, c;
  arrow::StringBuilder b;
  for (int64_t i = 0; i < rows; ++i) {
    EXPECT_TRUE(a.Append(i).ok());
    EXPECT_TRUE(b.Append(std::string(1 + i % 7, 'x')).ok());
    EXPECT_TRUE(c.Append(i * i).ok());
  }
  return arrow::Table::Make(
      arrow::schema({arrow::field("a", arrow::int64()), arrow::field("b", arrow::utf8()),
                     arrow::field("c", arrow::int64())}),
      {a.Finish().ValueOrDie(), b.Finish().ValueOrDie(), c.Finish().ValueOrDie()});
}

EncodedObject EachColumn(ObjectFormat format, int64_t rows = 1000) {
  ObjectDesign request;
  request.format = format;
  request.column_groups = {{{"a"}, 0, 0}, {{"b"}, 0, 0}, {{"c"}, 0, 0}};
  request.row_group_size = 128;
  return Ok(EncodeObject(Numbers(rows), request, arrow::default_memory_pool()));
}

std::shared_ptr<arrow::Table> ReadAll(ObjectReader* reader, const std::vector<int>& fields) {
  auto batches = Ok(reader->ReadFields(fields, 100, 0));
  return Ok(Ok(batches->ToTable())->CombineChunks());
}

class ColumnGroups : public testing::TestWithParam<ObjectFormat> {};

TEST_P(ColumnGroups, ReadOnlyTheGroupsOfTheFieldsAsked) {
  auto encoded = EachColumn(GetParam());
  DesignedObject object(encoded.data, encoded.design);
  auto reader = Ok(ObjectReader::Open(&object, arrow::default_memory_pool()));
  EXPECT_EQ(reader->schema()->field_names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(reader->num_rows(), 1000);
  object.reads.clear();
  auto table = ReadAll(reader.get(), {2, 0});
  auto expected = Numbers(1000);
  EXPECT_TRUE(table->column(0)->Equals(expected->column(2)));
  EXPECT_TRUE(table->column(1)->Equals(expected->column(0)));
  const auto& skipped = encoded.design.column_groups[1];
  for (const auto& [offset, length] : object.reads) {
    EXPECT_TRUE(offset + length <= skipped.offset || offset >= skipped.offset + skipped.length)
        << "read " << length << " bytes at " << offset << " inside the unread group";
  }
}

TEST_P(ColumnGroups, CountRowsWithoutFields) {
  auto encoded = EachColumn(GetParam());
  DesignedObject object(encoded.data, encoded.design);
  auto reader = Ok(ObjectReader::Open(&object, arrow::default_memory_pool()));
  EXPECT_EQ(ReadAll(reader.get(), {})->num_rows(), 1000);
  EXPECT_EQ(ReadAll(reader.get(), {1})->num_rows(), 1000);
}

TEST_P(ColumnGroups, OpensOnlyTheGroupsHoldingNamedColumns) {
  auto encoded = EachColumn(GetParam());
  DesignedObject object(encoded.data, encoded.design);
  std::vector<std::string> only{"c"};
  auto reader = Ok(ObjectReader::Open(&object, arrow::default_memory_pool(), &only));
  EXPECT_EQ(reader->schema()->field_names(), only);
  const auto& c = encoded.design.column_groups[2];
  for (const auto& [offset, length] : object.reads) EXPECT_GE(offset, c.offset);
}

TEST_P(ColumnGroups, ExtentsThatDisagreeWithTheDesignAreCorrupt) {
  auto encoded = EachColumn(GetParam());
  std::vector<ObjectDesign> wrong(4, encoded.design);
  wrong[0].num_rows += 1;
  std::swap(wrong[1].column_groups[0].columns, wrong[1].column_groups[1].columns);
  wrong[2].column_groups[1].length /= 2;
  wrong[3].column_groups[2].offset += 3;
  wrong[3].column_groups[2].length -= 3;
  for (const auto& design : wrong) {
    DesignedObject object(encoded.data, design);
    auto reader = ObjectReader::Open(&object, arrow::default_memory_pool());
    auto status = reader.ok() ? Ok((*reader)->ReadFields({0, 1, 2}, 100, 0))->ToTable().status()
                              : reader.status();
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(CodeOf(status), ErrorCode::kCorruptObject) << status.ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ColumnGroups,
                         testing::Values(ObjectFormat::kParquet, ObjectFormat::kIpc));

TEST(ObjectFile, ExtentsAreViewsOfTheirBytesOnly) {
  auto encoded = EachColumn(ObjectFormat::kIpc, 10);
  DesignedObject object(encoded.data, encoded.design);
  auto file = Ok(ObjectFile::OpenExtent(&object, 5, 20));
  EXPECT_EQ(Ok(file->GetSize()), 20);
  auto read = Ok(file->ReadAt(15, 100));
  EXPECT_EQ(read->size(), 5);
  EXPECT_EQ(read->data(), encoded.data->data() + 20);
  EXPECT_FALSE(ObjectFile::OpenExtent(&object, encoded.data->size() - 4, 5).ok());
}

}  // namespace
}  // namespace skyhook
