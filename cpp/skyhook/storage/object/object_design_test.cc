#include "skyhook/storage/object/object_design.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/object_writer.h"
#include "skyhook/testing/ok.h"

namespace skyhook {
namespace {

ObjectDesign TwoGroups() {
  ObjectDesign design;
  design.format = ObjectFormat::kIpc;
  design.column_groups = {{{"a", "b"}, 0, 100}, {{"c"}, 100, 50}};
  design.sort_by = {{"a", true}};
  design.compression = "lz4";
  design.row_group_size = 1000;
  design.num_rows = 7;
  design.generation = 3;
  return design;
}

std::shared_ptr<arrow::Array> Array(const std::shared_ptr<arrow::DataType>& type,
                                    const std::string& json) {
  return arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
}

std::string_view View(const arrow::Buffer& buffer) {
  return {reinterpret_cast<const char*>(buffer.data()), static_cast<size_t>(buffer.size())};
}

TEST(ObjectDesign, RoundTrips) {
  auto design = TwoGroups();
  auto encoded = Ok(SerializeDesign(design));
  auto parsed = Ok(ParseDesign(View(*encoded), 150));
  EXPECT_EQ(parsed, design);
}

TEST(ObjectDesign, RefusesExtentsOutsideTheObject) {
  auto encoded = Ok(SerializeDesign(TwoGroups()));
  auto parsed = ParseDesign(View(*encoded), 149);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(CodeOf(parsed.status()), ErrorCode::kCorruptObject);
}

TEST(ObjectDesign, RefusesOverlapsAndDuplicates) {
  auto overlapping = TwoGroups();
  overlapping.column_groups[1].offset = 99;
  auto encoded = Ok(SerializeDesign(overlapping));
  EXPECT_EQ(CodeOf(ParseDesign(View(*encoded), 1000).status()), ErrorCode::kCorruptObject);

  auto duplicate = TwoGroups();
  duplicate.column_groups[1].columns = {"a"};
  encoded = Ok(SerializeDesign(duplicate));
  EXPECT_EQ(CodeOf(ParseDesign(View(*encoded), 1000).status()), ErrorCode::kCorruptObject);
  EXPECT_EQ(CodeOf(CheckDesignRequest(duplicate)), ErrorCode::kInvalidRequest);
}

TEST(ObjectDesign, RefusesEveryTruncationAndGarbage) {
  auto encoded = Ok(SerializeDesign(TwoGroups()));
  auto text = std::string(View(*encoded));
  // The stream's last 8 bytes are an optional end marker.
  for (size_t size = 0; size < text.size() - 8; size += 7) {
    EXPECT_FALSE(ParseDesign(text.substr(0, size), 1000).ok()) << size;
  }
  for (size_t at = 0; at < text.size(); ++at) {
    auto flipped = text;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x5a);
    auto parsed = ParseDesign(flipped, 1000);  // an error or some valid design, never a crash
    if (!parsed.ok()) EXPECT_EQ(CodeOf(parsed.status()), ErrorCode::kCorruptObject);
  }
}

TEST(ObjectDesign, RowsKeepOneGroup) {
  auto design = TwoGroups();
  design.format = ObjectFormat::kRows;
  EXPECT_EQ(CodeOf(CheckDesignRequest(design)), ErrorCode::kInvalidRequest);
}

TEST(ObjectWriter, WritesGroupsAsExtentsAndSorts) {
  auto table = arrow::Table::Make(
      arrow::schema({arrow::field("a", arrow::int64()), arrow::field("b", arrow::utf8()),
                     arrow::field("c", arrow::float64())}),
      {Array(arrow::int64(), "[3, 1, 2]"), Array(arrow::utf8(), R"(["x", null, "z"])"),
       Array(arrow::float64(), "[1.5, 2.5, null]")});
  ObjectDesign request;
  request.format = ObjectFormat::kIpc;
  request.column_groups = {{{"c"}, 0, 0}};
  request.sort_by = {{"a", false}};
  auto encoded = Ok(EncodeObject(table, request, arrow::default_memory_pool()));
  ASSERT_EQ(encoded.design.column_groups.size(), 2);
  EXPECT_EQ(encoded.design.column_groups[0].columns, std::vector<std::string>{"c"});
  EXPECT_EQ(encoded.design.column_groups[1].columns, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(encoded.design.num_rows, 3);
  const auto& rest = encoded.design.column_groups[1];
  EXPECT_EQ(rest.offset + rest.length, static_cast<uint64_t>(encoded.data->size()));

  auto extent = arrow::SliceBuffer(encoded.data, rest.offset, rest.length);
  auto reader = Ok(
      arrow::ipc::RecordBatchFileReader::Open(std::make_shared<arrow::io::BufferReader>(extent)));
  auto batch = Ok(reader->ReadRecordBatch(0));
  EXPECT_TRUE(batch->column(0)->Equals(*Array(arrow::int64(), "[1, 2, 3]")));
  EXPECT_TRUE(batch->column(1)->Equals(*Array(arrow::utf8(), R"([null, "z", "x"])")));
}

TEST(ObjectWriter, RefusesUnknownColumns) {
  auto table = arrow::Table::Make(arrow::schema({arrow::field("a", arrow::int64())}),
                                  {Array(arrow::int64(), "[1]")});
  ObjectDesign request;
  request.column_groups = {{{"nope"}, 0, 0}};
  EXPECT_EQ(CodeOf(EncodeObject(table, request, arrow::default_memory_pool()).status()),
            ErrorCode::kUnknownColumn);
  request.column_groups = {{{}, 0, 0}};
  request.sort_by = {{"nope", false}};
  EXPECT_EQ(CodeOf(EncodeObject(table, request, arrow::default_memory_pool()).status()),
            ErrorCode::kUnknownColumn);
}

}  // namespace
}  // namespace skyhook
