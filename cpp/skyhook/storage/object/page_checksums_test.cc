#include "skyhook/storage/object/page_checksums.h"

#include <optional>
#include <random>
#include <string>
#include <vector>

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>
#include <parquet/file_reader.h>
#include <zlib.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/object_file.h"

namespace skyhook {
namespace {

using std::string_literals::operator""s;

TEST(PageChecksums, Crc32IsZlibsOnEveryLength) {
  std::mt19937 random(7);
  std::vector<uint8_t> bytes(4096 + 16);
  for (auto& byte : bytes) byte = static_cast<uint8_t>(random());
  for (int64_t length = 0; length <= 4096; ++length) {
    const uint8_t* data = bytes.data() + length % 16;  // unaligned starts too
    const uint32_t zlib = crc32(0, data, static_cast<uInt>(length));
    ASSERT_EQ(PageCrc32(data, length), zlib) << length;
  }
}

// A Thrift compact PageHeader: type, sizes, optionally a crc, then `extra`
// (more fields) and the stop byte.
std::string Header(int32_t type, int32_t size, std::optional<uint32_t> crc,
                   const std::string& extra = "") {
  auto varint = [](uint64_t value) {
    std::string out;
    do {
      out += static_cast<char>((value & 0x7f) | (value > 0x7f ? 0x80 : 0));
      value >>= 7;
    } while (value != 0);
    return out;
  };
  auto zigzag = [](int32_t value) {
    return static_cast<uint64_t>((static_cast<uint32_t>(value) << 1) ^
                                 static_cast<uint32_t>(value >> 31));
  };
  std::string out;
  out += '\x15' + varint(zigzag(type));                                 // field 1, i32
  out += '\x15' + varint(zigzag(size));                                 // field 2, i32
  out += '\x15' + varint(zigzag(size));                                 // field 3, i32
  if (crc) out += '\x15' + varint(zigzag(static_cast<int32_t>(*crc)));  // field 4
  return out + extra + '\0';                                            // stop
}

uint32_t Crc(const std::string& body) {
  return PageCrc32(reinterpret_cast<const uint8_t*>(body.data()), body.size());
}

arrow::Status Verify(const std::string& chunk) {
  return VerifyColumnChunkPages(reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size());
}

TEST(PageChecksums, VerifiesEveryPageKind) {
  // Dictionary, v1 and v2 data pages; a struct holding a list and a map skipped.
  const std::string nested = "\x1c\x15\x04\x19\x25\x02\x04\x1b\x01\x55\x02\x04\x00"s;
  const std::vector<std::pair<std::string, std::string>> pages = {
      {Header(2, 10, Crc("dictionary")), "dictionary"},
      {Header(0, 6, Crc("values"), nested), "values"},
      {Header(3, 17, Crc("levels and values")), "levels and values"},
      {Header(0, 0, Crc("")), ""}};
  std::string chunk;
  std::vector<size_t> body_bytes;
  for (const auto& [header, body] : pages) {
    chunk += header;
    for (size_t i = 0; i < body.size(); ++i) body_bytes.push_back(chunk.size() + i);
    chunk += body;
  }
  EXPECT_TRUE(Verify(chunk).ok()) << Verify(chunk).ToString();
  EXPECT_TRUE(Verify("").ok());
  for (size_t i : body_bytes) {  // every flipped bit of every page is caught
    for (int bit = 0; bit < 8; ++bit) {
      std::string damaged = chunk;
      damaged[i] = static_cast<char>(damaged[i] ^ (1 << bit));
      EXPECT_FALSE(Verify(damaged).ok()) << "byte " << i << " bit " << bit;
    }
  }
  // So is a flipped bit of a header's crc.
  EXPECT_FALSE(Verify(Header(0, 6, Crc("values") ^ 0x100) + "values").ok());
}

TEST(PageChecksums, PagesWithoutChecksumsPass) {
  EXPECT_TRUE(
      Verify(Header(0, 6, std::nullopt) + "values" + Header(3, 4, std::nullopt) + "more").ok());
  // An index page's crc is not Parquet's to check; Arrow skips it too.
  EXPECT_TRUE(Verify(Header(1, 3, 12345) + "abc").ok());
}

TEST(PageChecksums, RefusesMalformedHeaders) {
  const std::string page = Header(0, 6, Crc("values")) + "values";
  for (size_t cut = 1; cut < page.size(); ++cut) {
    EXPECT_FALSE(Verify(page.substr(0, cut)).ok()) << cut;
  }
  EXPECT_FALSE(Verify(page + "\x01").ok());                                // trailing bytes
  EXPECT_FALSE(Verify(Header(0, 100, 0) + "short").ok());                  // past the chunk
  EXPECT_FALSE(Verify(Header(0, -1, 0)).ok());                             // negative size
  EXPECT_FALSE(Verify("\x15\x00\x00"s).ok());                              // no size
  EXPECT_FALSE(Verify(Header(0, 0, 0, "\x1d")).ok());                      // unknown type
  EXPECT_FALSE(Verify(Header(0, 0, 0, "\x19\xf5\xff\xff\xff\x0f")).ok());  // huge list
  EXPECT_FALSE(Verify(Header(0, 0, 0, "\x18\xff\xff\xff\xff\x0f")).ok());  // huge binary
  EXPECT_FALSE(Verify(Header(0, 0, 0, std::string(10000, '\x1c'))).ok());  // deep nesting
  EXPECT_FALSE(Verify(Header(0, 0, 0, "\x16\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")).ok());
  // The crc field of another type than i32 is malformed, not skipped.
  EXPECT_FALSE(Verify("\x15\x00\x15\x04\x15\x04\x16\x02\x00"s + "ab").ok());
}

std::shared_ptr<arrow::Buffer> WrittenFile(bool v2) {
  std::vector<int64_t> ids;
  arrow::StringBuilder names;
  for (int64_t i = 0; i < 30000; ++i) {
    ids.push_back(i * 7);
    EXPECT_TRUE(names.Append("name " + std::to_string(i % 50)).ok());
  }
  arrow::Int64Builder id_builder;
  EXPECT_TRUE(id_builder.AppendValues(ids).ok());
  auto table = arrow::Table::Make(
      arrow::schema({arrow::field("id", arrow::int64()), arrow::field("name", arrow::utf8())}),
      {id_builder.Finish().ValueOrDie(), names.Finish().ValueOrDie()});
  auto properties = parquet::WriterProperties::Builder()
                        .enable_page_checksum()
                        ->data_pagesize(4096)
                        ->data_page_version(v2 ? parquet::ParquetDataPageVersion::V2
                                               : parquet::ParquetDataPageVersion::V1)
                        ->compression(parquet::Compression::ZSTD)
                        ->build();
  auto sink = arrow::io::BufferOutputStream::Create().ValueOrDie();
  EXPECT_TRUE(
      parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink, 10000, properties)
          .ok());
  return sink->Finish().ValueOrDie();
}

TEST(PageChecksums, ChecksExactlyTheChunksArrowReads) {
  for (bool v2 : {false, true}) {
    auto file = WrittenFile(v2);
    auto reader = parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(file));
    auto metadata = reader->metadata();
    ASSERT_EQ(metadata->num_row_groups(), 3);
    auto checksums = PageChecksums::Make(metadata).ValueOrDie();
    for (int group = 0; group < 3; ++group) {
      for (int column = 0; column < 2; ++column) {
        auto chunk = metadata->RowGroup(group)->ColumnChunk(column);
        int64_t start = chunk->has_dictionary_page() ? chunk->dictionary_page_offset()
                                                     : chunk->data_page_offset();
        int64_t length = chunk->total_compressed_size();
        EXPECT_TRUE(checksums->Check(start, *SliceBuffer(file, start, length)).ok());
        // Damaged values: an error naming the column and row group.
        std::string bytes = SliceBuffer(file, start, length)->ToString();
        bytes[length - 2] ^= 0x04;
        auto status = checksums->Check(start, arrow::Buffer(bytes));
        EXPECT_EQ(CodeOf(status), ErrorCode::kCorruptObject);
        EXPECT_NE(status.message().find(std::string("column '") + (column ? "name" : "id") +
                                        "' of row group " + std::to_string(group)),
                  std::string::npos)
            << status.ToString();
        // A read of another shape within the chunks is refused, not let through.
        EXPECT_EQ(CodeOf(checksums->Check(start + 1, *SliceBuffer(file, start + 1, length - 1))),
                  ErrorCode::kCorruptObject);
      }
    }
    // The footer lies outside the chunks.
    EXPECT_TRUE(checksums->Check(file->size() - 8, *SliceBuffer(file, file->size() - 8, 8)).ok());
  }
}

// An object whose bytes a test changes behind the reader's back, as a kept
// mapping's adapter would never let happen unseen.
class ChangingObject : public ObjectContext {
 public:
  ChangingObject(std::string bytes, VerifiedChunks* verified)
      : bytes_(std::move(bytes)), verified_(verified) {}
  std::string& bytes() { return bytes_; }
  arrow::Result<uint64_t> Size() override { return bytes_.size(); }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(uint64_t offset, uint64_t length) override {
    return arrow::Buffer::FromString(bytes_.substr(offset, length));  // owns its copy
  }
  arrow::Result<std::optional<std::string>> GetXattr(const std::string&) override {
    return std::nullopt;
  }
  arrow::Result<std::optional<std::string>> GetOmap(const std::string&) override {
    return std::nullopt;
  }
  VerifiedChunks* verified_chunks() override { return verified_; }

 private:
  std::string bytes_;
  VerifiedChunks* verified_;
};

TEST(PageChecksums, AChunkIsVerifiedOncePerUnchangedObject) {
  auto file = WrittenFile(false);
  auto metadata =
      parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(file))->metadata();
  auto checksums = PageChecksums::Make(metadata).ValueOrDie();
  auto chunk = metadata->RowGroup(1)->ColumnChunk(0);
  const int64_t start =
      chunk->has_dictionary_page() ? chunk->dictionary_page_offset() : chunk->data_page_offset();
  const int64_t length = chunk->total_compressed_size();
  for (bool kept : {true, false}) {
    VerifiedChunks verified;
    ChangingObject object(file->ToString(), kept ? &verified : nullptr);
    auto view = ObjectFile::Open(&object).ValueOrDie();
    view->VerifyPages(checksums);
    ASSERT_TRUE(view->ReadAt(start, length).ok());
    EXPECT_EQ(verified.Contains(start, length), kept);
    EXPECT_FALSE(verified.Contains(start + 1, length - 1));
    object.bytes()[start + length - 2] ^= 0x04;  // damaged where the adapter cannot see it
    auto again = ObjectFile::Open(&object).ValueOrDie();
    again->VerifyPages(checksums);
    // Kept: verified once, not again; otherwise the damage is found.
    EXPECT_EQ(again->ReadAt(start, length).ok(), kept);
    // Whether a read is a chunk is still the footer's to say.
    EXPECT_EQ(CodeOf(again->ReadAt(start + 1, length - 1).status()), ErrorCode::kCorruptObject);
  }
}

}  // namespace
}  // namespace skyhook
