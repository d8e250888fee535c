// The row format end to end: EncodeRows, then the ObjectReader of format
// "rows" over the bytes, against the Arrow table that was encoded; and
// corrupt objects, which must fail as kCorruptObject and never crash.
#include <cstring>
#include <string>
#include <vector>

#include <arrow/api.h>
#include <arrow/compute/cast.h>
#include <arrow/ipc/writer.h>
#include <arrow/json/from_string.h>
#include <flatbuffers/flexbuffers.h>
#include <gtest/gtest.h>

#include "fuzz/memory_object_context.h"
#include "skyhook/errors/error.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/object/row_encoder.h"
#include "skyhook/storage/object/row_format_generated.h"
#include "skyhook/storage/object/row_object_reader.h"

namespace skyhook {
namespace {

using arrow::TimeUnit;

std::shared_ptr<arrow::Array> FromJson(const std::shared_ptr<arrow::DataType>& type,
                                       const std::string& json) {
  return arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
}

// Every type the format stores, with nulls, extremes and empty values.
std::shared_ptr<arrow::Table> TypedTable() {
  const std::vector<std::pair<std::shared_ptr<arrow::DataType>, std::string>> columns = {
      {arrow::boolean(), "[true, false, null, true]"},
      {arrow::int8(), "[-128, 127, null, 0]"},
      {arrow::int16(), "[-32768, 32767, null, 1]"},
      {arrow::int32(), "[-2147483648, 2147483647, null, 2]"},
      {arrow::int64(), "[-9223372036854775808, 9223372036854775807, null, 3]"},
      {arrow::uint8(), "[0, 255, null, 4]"},
      {arrow::uint16(), "[0, 65535, null, 5]"},
      {arrow::uint32(), "[0, 4294967295, null, 6]"},
      {arrow::uint64(), "[0, 18446744073709551615, null, 7]"},
      {arrow::float16(), "[1.5, -0.0, null, 65504]"},
      {arrow::float32(), "[1.5, -3.25e38, null, NaN]"},
      {arrow::float64(), "[1e308, -0.0, null, Inf]"},
      {arrow::utf8(), R"(["a", "", null, "ünïcode"])"},
      {arrow::large_utf8(), R"(["b", "", null, "long"])"},
      {arrow::utf8_view(), R"(["a string longer than twelve bytes", "", null, "x"])"},
      {arrow::binary(), R"(["\u0000\u0001", "", null, "z"])"},
      {arrow::large_binary(), R"(["q", "", null, "r"])"},
      {arrow::binary_view(), R"(["a binary longer than twelve bytes", "", null, "x"])"},
      {arrow::fixed_size_binary(3), R"(["abc", "def", null, "ghi"])"},
      {arrow::decimal32(7, 2), R"(["12345.67", "-0.01", null, "0.00"])"},
      {arrow::decimal64(15, 3), R"(["123456789012.345", "-1.000", null, "0.000"])"},
      {arrow::decimal128(38, 10),
       R"(["1234567890123456789012345678.0123456789", "-1.0000000000", null, "0E-10"])"},
      {arrow::decimal256(50, 2),
       R"(["123456789012345678901234567890123456789012345678.00", "0.00", null, "-1.00"])"},
      {arrow::date32(), "[0, -719162, null, 2932896]"},
      {arrow::date64(), "[0, 86400000, null, -86400000]"},
      {arrow::time32(TimeUnit::SECOND), "[0, 86399, null, 1]"},
      {arrow::time32(TimeUnit::MILLI), "[0, 86399999, null, 1]"},
      {arrow::time64(TimeUnit::MICRO), "[0, 86399999999, null, 1]"},
      {arrow::time64(TimeUnit::NANO), "[0, 86399999999999, null, 1]"},
      {arrow::timestamp(TimeUnit::SECOND), "[0, -1, null, 1700000000]"},
      {arrow::timestamp(TimeUnit::NANO, "America/New_York"), "[0, 1, null, 9223372036854775807]"},
      {arrow::duration(TimeUnit::MILLI), "[0, -1, null, 1]"},
      {arrow::list(arrow::int32()), "[[1, null, 3], [], null, [4]]"},
      {arrow::large_list(arrow::utf8()), R"([["a"], [], null, ["b", null]])"},
      {arrow::fixed_size_list(arrow::float64(), 2), "[[1, 2], [null, 4], null, [5, 6]]"},
      {arrow::struct_({arrow::field("a", arrow::int64()), arrow::field("b", arrow::utf8())}),
       R"([{"a": 1, "b": "x"}, {"a": null, "b": null}, null, {"a": 4, "b": ""}])"},
      {arrow::list(arrow::struct_({arrow::field("k", arrow::list(arrow::int8()))})),
       R"([[{"k": [1]}, null], [], null, [{"k": null}]])"},
      {arrow::int64(), "[null, null, null, null]"},
  };
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (const auto& [type, json] : columns) {
    fields.push_back(arrow::field("c" + std::to_string(fields.size()), type));
    arrays.push_back(FromJson(type, json));
  }
  fields.push_back(arrow::field("dict", arrow::dictionary(arrow::int8(), arrow::utf8())));
  arrays.push_back(arrow::json::DictArrayFromJSONString(fields.back()->type(), "[1, 0, null, 1]",
                                                        R"(["x", "y"])")
                       .ValueOrDie());
  auto metadata = arrow::key_value_metadata({"origin"}, {"test"});
  return arrow::Table::Make(arrow::schema(fields, metadata), arrays);
}

// Rows enough for several blocks, their last one partial.
std::shared_ptr<arrow::Table> ManyRows(int64_t rows) {
  arrow::Int64Builder ids;
  arrow::StringBuilder words;
  for (int64_t i = 0; i < rows; ++i) {
    EXPECT_TRUE(ids.Append(i * 3).ok());
    EXPECT_TRUE((i % 7 == 0 ? words.AppendNull() : words.Append(std::to_string(i))).ok());
  }
  return arrow::Table::Make(
      arrow::schema({arrow::field("id", arrow::int64()), arrow::field("word", arrow::utf8())}),
      {ids.Finish().ValueOrDie(), words.Finish().ValueOrDie()});
}

std::shared_ptr<arrow::Buffer> Encode(const arrow::Table& table) {
  return EncodeRows(table, arrow::default_memory_pool()).ValueOrDie();
}

arrow::Result<std::unique_ptr<ObjectReader>> Open(MemoryObjectContext* object) {
  return ObjectReader::Open(object, arrow::default_memory_pool());
}

// All batches of a read, checking that none has more than batch_size rows.
arrow::Result<std::shared_ptr<arrow::Table>> ReadAll(std::shared_ptr<arrow::Buffer> bytes,
                                                     std::vector<int> fields,
                                                     int64_t batch_size = 1000,
                                                     int64_t start_row = 0) {
  MemoryObjectContext object(std::move(bytes), std::string(kRowFormat));
  ARROW_ASSIGN_OR_RAISE(auto reader, Open(&object));
  ARROW_ASSIGN_OR_RAISE(auto batches, reader->ReadFields(fields, batch_size, start_row));
  std::vector<std::shared_ptr<arrow::RecordBatch>> all;
  std::shared_ptr<arrow::RecordBatch> batch;
  while (true) {
    ARROW_RETURN_NOT_OK(batches->ReadNext(&batch));
    if (batch == nullptr) break;
    EXPECT_LE(batch->num_rows(), batch_size);
    EXPECT_GT(batch->num_rows(), 0);
    all.push_back(batch);
  }
  return arrow::Table::FromRecordBatches(batches->schema(), all);
}

std::vector<int> AllFields(const arrow::Table& table) {
  std::vector<int> fields(table.num_columns());
  for (int i = 0; i < table.num_columns(); ++i) fields[i] = i;
  return fields;
}

// A dictionary column's values: the reader builds each batch's dictionary anew.
std::shared_ptr<arrow::ChunkedArray> Values(const std::shared_ptr<arrow::ChunkedArray>& column) {
  if (column->type()->id() != arrow::Type::DICTIONARY) return column;
  const auto& type = static_cast<const arrow::DictionaryType&>(*column->type());
  return arrow::compute::Cast(column, type.value_type()).ValueOrDie().chunked_array();
}

void ExpectEqualTables(const arrow::Table& expected, const arrow::Table& actual) {
  ASSERT_TRUE(actual.schema()->Equals(*expected.schema(), /*check_metadata=*/false))
      << actual.schema()->ToString() << "\nvs\n"
      << expected.schema()->ToString();
  ASSERT_EQ(actual.num_rows(), expected.num_rows());
  for (int i = 0; i < expected.num_columns(); ++i) {
    EXPECT_TRUE(Values(actual.column(i))
                    ->Equals(*Values(expected.column(i)), arrow::EqualOptions().nans_equal(true)))
        << expected.field(i)->ToString() << "\n"
        << actual.column(i)->ToString() << "\nvs\n"
        << expected.column(i)->ToString();
  }
}

TEST(RowFormat, RoundTripsEveryType) {
  auto table = TypedTable();
  MemoryObjectContext object(Encode(*table), std::string(kRowFormat));
  auto reader = Open(&object).ValueOrDie();
  EXPECT_TRUE(reader->schema()->Equals(*table->schema(), true));
  EXPECT_EQ(reader->num_rows(), table->num_rows());
  auto read = ReadAll(Encode(*table), AllFields(*table)).ValueOrDie();
  ExpectEqualTables(*table, *read);
}

TEST(RowFormat, ProjectsInAnyOrderWithRepeats) {
  auto table = TypedTable();
  auto read = ReadAll(Encode(*table), {12, 3, 12}).ValueOrDie();
  ASSERT_EQ(read->num_columns(), 3);
  EXPECT_TRUE(read->column(0)->Equals(*table->column(12)));
  EXPECT_TRUE(read->column(1)->Equals(*table->column(3)));
  EXPECT_TRUE(read->column(2)->Equals(*table->column(12)));
}

TEST(RowFormat, EmptyTable) {
  auto table = TypedTable()->Slice(0, 0);
  auto read = ReadAll(Encode(*table), AllFields(*table)).ValueOrDie();
  EXPECT_EQ(read->num_rows(), 0);
  EXPECT_TRUE(read->schema()->Equals(*table->schema()));
}

TEST(RowFormat, ManyBlocksAnyBatchSizeAndStartRow) {
  const int64_t rows = 3 * kRowsPerBlock + 123;
  auto table = ManyRows(rows);
  auto bytes = Encode(*table);
  for (int64_t batch_size : {1L, 1000L, kRowsPerBlock, 100000L}) {
    for (int64_t start :
         {0L, 1L, kRowsPerBlock - 1, kRowsPerBlock, kRowsPerBlock + 17, rows - 1, rows, rows + 5}) {
      if (batch_size == 1 && start < rows - 10) continue;  // slow, and nothing new
      auto read = ReadAll(bytes, {0, 1}, batch_size, start).ValueOrDie();
      auto expected = table->Slice(std::min(start, rows));
      ExpectEqualTables(*expected, *read);
    }
  }
  // No columns (a count): the rows are there without decoding any value.
  EXPECT_EQ(ReadAll(bytes, {}, 5000, 10).ValueOrDie()->num_rows(), rows - 10);
}

TEST(RowFormat, ChunkedInputKeepsFullBlocks) {
  auto table = ManyRows(10000);
  auto chunked =
      arrow::ConcatenateTables({table->Slice(0, 3), table->Slice(3, 5000), table->Slice(5003)})
          .ValueOrDie();
  auto bytes = Encode(*chunked);
  const auto* root = rows::GetRowObject(bytes->data());
  ASSERT_EQ(root->blocks()->size(), 3u);
  EXPECT_EQ(root->blocks()->Get(0)->rows()->size(), static_cast<uint32_t>(kRowsPerBlock));
  ExpectEqualTables(*table, *ReadAll(bytes, {0, 1}).ValueOrDie());
}

TEST(RowFormat, RefusesTypesItCannotStoreNamingTheColumn) {
  auto table = arrow::Table::Make(
      arrow::schema({arrow::field("fine", arrow::int32()),
                     arrow::field("m", arrow::map(arrow::utf8(), arrow::int32()))}),
      {FromJson(arrow::int32(), "[1]"),
       FromJson(arrow::map(arrow::utf8(), arrow::int32()), R"([[["a", 1]]])")});
  auto encoded = EncodeRows(*table, arrow::default_memory_pool());
  ASSERT_FALSE(encoded.ok());
  EXPECT_EQ(CodeOf(encoded.status()), ErrorCode::kInvalidRequest);
  EXPECT_NE(encoded.status().message().find("column 'm'"), std::string::npos)
      << encoded.status().message();
}

// A decode of every column of an object that must fail as corrupt (or, for a
// mutation that happens to keep the object valid, succeed).
void ExpectCorruptOrValid(std::shared_ptr<arrow::Buffer> bytes, bool must_fail) {
  MemoryObjectContext object(bytes, std::string(kRowFormat));
  auto reader = Open(&object);
  arrow::Status status = reader.status();
  if (status.ok()) {
    std::vector<int> fields(reader.ValueOrDie()->schema()->num_fields());
    for (size_t i = 0; i < fields.size(); ++i) fields[i] = static_cast<int>(i);
    status = ReadAll(bytes, fields, 3).status();
  }
  if (must_fail) ASSERT_FALSE(status.ok());
  if (!status.ok()) {
    EXPECT_EQ(CodeOf(status), ErrorCode::kCorruptObject) << status.ToString();
  }
}

std::shared_ptr<arrow::Buffer> Copy(const uint8_t* data, int64_t size) {
  auto copy = arrow::AllocateBuffer(size).ValueOrDie();
  std::memcpy(copy->mutable_data(), data, size);
  return copy;
}

TEST(RowFormat, TruncatedObjectsAreCorrupt) {
  auto bytes = Encode(*TypedTable());
  // Up to the padding that aligns the first row written, which ends the buffer.
  for (int64_t size = 0; size < bytes->size(); size += 7) {
    ExpectCorruptOrValid(Copy(bytes->data(), size), /*must_fail=*/size < bytes->size() - 8);
  }
}

TEST(RowFormat, FlippedBytesNeverCrash) {
  auto bytes = Encode(*TypedTable());
  for (int64_t at = 0; at < bytes->size(); ++at) {
    for (uint8_t mask : {0x01, 0x80, 0xFF}) {
      auto flipped = Copy(bytes->data(), bytes->size());
      flipped->mutable_data()[at] ^= mask;
      ExpectCorruptOrValid(flipped, /*must_fail=*/false);
    }
  }
}

// A hand-built object: one int32 column "x", rows as given.
std::shared_ptr<arrow::Buffer> ObjectOf(const std::vector<std::vector<uint8_t>>& rows,
                                        int64_t num_rows, int64_t first_row = 0,
                                        uint32_t version = kRowFormatVersion) {
  auto schema =
      arrow::ipc::SerializeSchema(*arrow::schema({arrow::field("x", arrow::int32())})).ValueOrDie();
  flatbuffers::FlatBufferBuilder builder;
  std::vector<flatbuffers::Offset<rows::Row>> offsets;
  for (const auto& row : rows)
    offsets.push_back(rows::CreateRow(builder, builder.CreateVector(row)));
  auto block = rows::CreateRowBlock(builder, first_row, builder.CreateVector(offsets));
  auto root =
      rows::CreateRowObject(builder, version, builder.CreateVector(schema->data(), schema->size()),
                            num_rows, builder.CreateVector(&block, 1));
  rows::FinishRowObjectBuffer(builder, root);
  return Copy(builder.GetBufferPointer(), builder.GetSize());
}

template <typename Fill>
std::vector<uint8_t> Row(Fill fill) {
  flexbuffers::Builder row;
  row.Vector([&] { fill(row); });
  row.Finish();
  return row.GetBuffer();
}

void ExpectCorrupt(std::shared_ptr<arrow::Buffer> bytes, const std::string& words) {
  auto read = ReadAll(std::move(bytes), {0});
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(CodeOf(read.status()), ErrorCode::kCorruptObject) << read.status().ToString();
  EXPECT_NE(read.status().message().find(words), std::string::npos) << read.status().message();
}

TEST(RowFormat, WrongValuesAreCorrupt) {
  auto good = Row([](flexbuffers::Builder& row) { row.Int(7); });
  ASSERT_TRUE(ReadAll(ObjectOf({good}, 1), {0}).ok());
  ExpectCorrupt(ObjectOf({Row([](flexbuffers::Builder& row) { row.String("7"); })}, 1),
                "string where int32");
  ExpectCorrupt(ObjectOf({Row([](flexbuffers::Builder& row) { row.Int(1LL << 40); })}, 1),
                "out of the range of int32");
  ExpectCorrupt(ObjectOf({Row([](flexbuffers::Builder& row) { row.UInt(7); })}, 1),
                "uint where int32");
  ExpectCorrupt(ObjectOf({Row([](flexbuffers::Builder&) {})}, 1), "0 values for 1 columns");
  ExpectCorrupt(ObjectOf({Row([](flexbuffers::Builder& row) {
                           row.Int(1);
                           row.Int(2);
                         })},
                         1),
                "2 values for 1 columns");
  flexbuffers::Builder scalar;
  scalar.Int(7);
  scalar.Finish();
  ExpectCorrupt(ObjectOf({scalar.GetBuffer()}, 1), "not a FlexBuffers vector");
  ExpectCorrupt(ObjectOf({{1, 2, 3, 4, 5}}, 1), "not a valid FlexBuffer");
}

TEST(RowFormat, DisagreeingCountsAndVersionsAreCorrupt) {
  auto good = Row([](flexbuffers::Builder& row) { row.Int(7); });
  ExpectCorrupt(ObjectOf({good, good}, 3), "blocks hold 2 rows, its header says 3");
  ExpectCorrupt(ObjectOf({good}, 1, 5), "starts at row 5");
  ExpectCorrupt(ObjectOf({}, 0), "has no rows");
  ExpectCorrupt(ObjectOf({good}, 1, 0, kRowFormatVersion + 1), "version");
}

}  // namespace
}  // namespace skyhook
