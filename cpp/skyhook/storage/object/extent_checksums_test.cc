#include "skyhook/storage/object/extent_checksums.h"

#include <random>
#include <string>

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/object_file.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/object/object_writer.h"
#include "skyhook/testing/designed_object.h"
#include "skyhook/testing/ok.h"

namespace skyhook {
namespace {

std::shared_ptr<arrow::Table> Rows(int64_t rows) {
  arrow::Int64Builder ids;
  arrow::StringBuilder names;
  for (int64_t i = 0; i < rows; ++i) {
    EXPECT_TRUE(ids.Append(i * 7919 % 100003).ok());
    EXPECT_TRUE(names.Append("name-" + std::to_string(i)).ok());
  }
  return arrow::Table::Make(
      arrow::schema({arrow::field("id", arrow::int64()), arrow::field("name", arrow::utf8())}),
      {ids.Finish().ValueOrDie(), names.Finish().ValueOrDie()});
}

EncodedObject Encoded(ObjectFormat format, int64_t rows = 3000) {
  ObjectDesign request;
  request.format = format;
  request.column_groups = {{{}, 0, 0, {}}};
  request.row_group_size = 500;
  request.compression = "none";
  return Ok(EncodeObject(Rows(rows), request, arrow::default_memory_pool()));
}

// The whole object as read by the core, or its error.
arrow::Result<std::shared_ptr<arrow::Table>> ReadBack(const std::shared_ptr<arrow::Buffer>& data,
                                                      const ObjectDesign& design) {
  DesignedObject object(data, design);
  ARROW_ASSIGN_OR_RAISE(auto reader, ObjectReader::Open(&object, arrow::default_memory_pool()));
  ARROW_ASSIGN_OR_RAISE(auto batches, reader->ReadFields({0, 1}, 1000, 0));
  ARROW_ASSIGN_OR_RAISE(auto table, batches->ToTable());
  return table->CombineChunks();
}

class EveryFormat : public testing::TestWithParam<ObjectFormat> {};

TEST_P(EveryFormat, AFlippedBitIsACorruptObjectNeverAWrongAnswer) {
  auto encoded = Encoded(GetParam());
  auto expected = Ok(ReadBack(encoded.data, encoded.design));
  std::mt19937 random(7);
  const auto size = static_cast<size_t>(encoded.data->size());
  int corrupt = 0;
  for (int flip = 0; flip < 300; ++flip) {
    std::string damaged = encoded.data->ToString();
    damaged[random() % size] ^= static_cast<char>(1 << (random() % 8));
    auto read = ReadBack(arrow::Buffer::FromString(damaged), encoded.design);
    if (read.ok()) {
      EXPECT_TRUE((*read)->Equals(*expected)) << "a wrong answer at flip " << flip;
    } else {
      EXPECT_EQ(CodeOf(read.status()), ErrorCode::kCorruptObject) << read.status().ToString();
      ++corrupt;
    }
  }
  EXPECT_GT(corrupt, 290);  // every byte is read: only a flip in the table's padding passes
}

TEST_P(EveryFormat, TheExtentStaysAFileOfItsFormatWithTheTableBeforeItsFooter) {
  auto encoded = Encoded(GetParam());
  const auto& checksums = *encoded.design.column_groups[0].checksums;
  EXPECT_TRUE(DescribesExtent(checksums, encoded.design.column_groups[0].length));
  const auto& data = *encoded.data;
  const auto tail = static_cast<int64_t>(checksums.table_offset);
  EXPECT_EQ(Crc32c(data.data() + tail, data.size() - tail), checksums.tail_crc);
  auto table = TableCrcs(checksums, *arrow::SliceBuffer(encoded.data, tail));
  ASSERT_EQ(table.size(), checksums.chunks());
  for (size_t chunk = 0; chunk < table.size(); ++chunk) {
    const int64_t start = static_cast<int64_t>(chunk) * checksums.chunk_bytes;
    EXPECT_EQ(Crc32c(data.data() + start, std::min(checksums.chunk_bytes, tail - start)),
              table[chunk]);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, EveryFormat,
                         testing::Values(ObjectFormat::kRows, ObjectFormat::kIpc,
                                         ObjectFormat::kParquet));

TEST(ExtentChecksums, ReadsAreWidenedToWholeChunksAndTheTailReadOnce) {
  auto encoded = Encoded(ObjectFormat::kIpc);
  DesignedObject object(encoded.data, encoded.design);
  auto file = Ok(ObjectFile::OpenExtent(&object, encoded.design.column_groups[0]));
  const auto& checksums = *encoded.design.column_groups[0].checksums;
  ASSERT_GT(checksums.table_offset, 3 * kChunkBytes);
  auto bytes = Ok(file->ReadAt(kChunkBytes + 10, 20));
  EXPECT_EQ(bytes->ToString(), encoded.data->ToString().substr(kChunkBytes + 10, 20));
  ASSERT_EQ(object.reads.size(), 2u);  // the tail, then one chunk
  EXPECT_EQ(object.reads[0].first, checksums.table_offset);
  EXPECT_EQ(object.reads[1], std::make_pair(uint64_t{kChunkBytes}, uint64_t{kChunkBytes}));
  Ok(file->ReadAt(kChunkBytes + 100, kChunkBytes));  // goes on: only the next chunk
  EXPECT_EQ(object.reads.back(), std::make_pair(uint64_t{2 * kChunkBytes}, uint64_t{kChunkBytes}));
}

TEST(ExtentChecksums, AChecksumSinkCrcsChunksAcrossWrites) {
  auto sink = Ok(ChecksummingSink::Make(kMinChunkBytes, arrow::default_memory_pool()));
  std::string data(3 * kMinChunkBytes + 123, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31);
  ASSERT_TRUE(sink->Write(data.data(), 1000).ok());
  ASSERT_TRUE(sink->Write(data.data() + 1000, static_cast<int64_t>(data.size()) - 1000).ok());
  ASSERT_TRUE(sink->WriteTable().ok());
  ASSERT_TRUE(sink->Write("footer", 6).ok());
  ExtentChecksums checksums;
  auto extent = Ok(sink->Finish(&checksums));
  EXPECT_EQ(checksums.table_offset, data.size());
  EXPECT_EQ(checksums.chunks(), 4u);
  EXPECT_EQ(extent->size(), static_cast<int64_t>(data.size() + 16 + 6));  // table padded to 8
  auto table = TableCrcs(checksums, *arrow::SliceBuffer(extent, checksums.table_offset));
  EXPECT_EQ(table[3],
            Crc32c(reinterpret_cast<const uint8_t*>(data.data()) + 3 * kMinChunkBytes, 123));
}

TEST(ExtentChecksums, ADamagedDesignAttributeIsRefused) {
  auto encoded = Encoded(ObjectFormat::kParquet);
  const std::string attribute = Ok(SerializeDesign(encoded.design))->ToString();
  const uint64_t size = static_cast<uint64_t>(encoded.data->size());
  for (size_t byte = 0; byte < attribute.size(); ++byte) {
    for (int bit = 0; bit < 8; bit += 3) {
      std::string damaged = attribute;
      damaged[byte] ^= static_cast<char>(1 << bit);
      auto parsed = ParseDesign(damaged, size);
      if (parsed.ok()) {
        EXPECT_EQ(*parsed, encoded.design) << "byte " << byte;  // padding or unused bytes
      } else {
        EXPECT_EQ(CodeOf(parsed.status()), ErrorCode::kCorruptObject);
      }
    }
  }
}

}  // namespace
}  // namespace skyhook
