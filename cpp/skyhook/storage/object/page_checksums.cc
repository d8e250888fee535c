#include "skyhook/storage/object/page_checksums.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include <isa-l/crc.h>
#include <parquet/exception.h>

#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

// Thrift compact protocol types (field headers and collection headers).
enum CompactType : uint8_t {
  kStop = 0,
  kBoolTrue = 1,
  kBoolFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12
};

// PageHeader.type values whose pages may carry a CRC (not INDEX_PAGE = 1).
constexpr int32_t kDataPage = 0;
constexpr int32_t kDictionaryPage = 2;
constexpr int32_t kDataPageV2 = 3;

// A PageHeader nests three deep (Statistics in a data page header); Thrift's
// own limit is 64.
constexpr int kMaxDepth = 32;

// The fields of a PageHeader that checking needs.
struct PageHeader {
  std::optional<int32_t> type;                  // 1
  std::optional<int32_t> compressed_page_size;  // 3
  std::optional<int32_t> crc;                   // 4
};

// Reads Thrift compact values from [position, end), never past end.
class CompactReader {
 public:
  CompactReader(const uint8_t* position, const uint8_t* end) : position_(position), end_(end) {}

  const uint8_t* position() const { return position_; }

  arrow::Status ReadPageHeader(PageHeader* header) {
    int16_t last_id = 0;
    while (true) {
      uint8_t type;
      int16_t id;
      ARROW_RETURN_NOT_OK(ReadFieldHeader(&last_id, &type, &id));
      if (type == kStop) return arrow::Status::OK();
      std::optional<int32_t>* wanted = id == 1   ? &header->type
                                       : id == 3 ? &header->compressed_page_size
                                       : id == 4 ? &header->crc
                                                 : nullptr;
      if (wanted == nullptr) {
        ARROW_RETURN_NOT_OK(Skip(type, /*depth=*/1, /*in_collection=*/false));
        continue;
      }
      if (type != kI32) return Malformed("page header field of an unexpected type");
      uint64_t value;
      ARROW_RETURN_NOT_OK(ReadVarint(&value));
      *wanted = static_cast<int32_t>(static_cast<uint32_t>(value >> 1) ^
                                     -static_cast<uint32_t>(value & 1));  // zigzag
    }
  }

 private:
  static arrow::Status Malformed(const char* what) { return arrow::Status::Invalid(what); }

  arrow::Status ReadByte(uint8_t* out) {
    if (position_ == end_) return Malformed("page header truncated");
    *out = *position_++;
    return arrow::Status::OK();
  }

  arrow::Status Advance(uint64_t bytes) {
    if (bytes > static_cast<uint64_t>(end_ - position_)) return Malformed("page header truncated");
    position_ += bytes;
    return arrow::Status::OK();
  }

  arrow::Status ReadVarint(uint64_t* out) {
    *out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t byte;
      ARROW_RETURN_NOT_OK(ReadByte(&byte));
      *out |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return arrow::Status::OK();
    }
    return Malformed("page header varint too long");
  }

  // A collection's element count: each element takes at least one byte, so a
  // count beyond the bytes left is corrupt (and bounds the walk's time).
  arrow::Status CheckCount(uint64_t count) {
    if (count > static_cast<uint64_t>(end_ - position_)) {
      return Malformed("page header collection larger than its chunk");
    }
    return arrow::Status::OK();
  }

  arrow::Status ReadFieldHeader(int16_t* last_id, uint8_t* type, int16_t* id) {
    uint8_t byte;
    ARROW_RETURN_NOT_OK(ReadByte(&byte));
    *type = byte & 0x0f;
    if (*type == kStop) return arrow::Status::OK();
    const uint8_t delta = byte >> 4;
    if (delta != 0) {
      *id = static_cast<int16_t>(*last_id + delta);
    } else {
      uint64_t value;
      ARROW_RETURN_NOT_OK(ReadVarint(&value));
      *id = static_cast<int16_t>((value >> 1) ^ (~(value & 1) + 1));
    }
    *last_id = *id;
    return arrow::Status::OK();
  }

  arrow::Status SkipStruct(int depth) {
    int16_t last_id = 0;
    while (true) {
      uint8_t type;
      int16_t id;
      ARROW_RETURN_NOT_OK(ReadFieldHeader(&last_id, &type, &id));
      if (type == kStop) return arrow::Status::OK();
      ARROW_RETURN_NOT_OK(Skip(type, depth + 1, /*in_collection=*/false));
    }
  }

  arrow::Status Skip(uint8_t type, int depth, bool in_collection) {
    if (depth > kMaxDepth) return Malformed("page header nested too deeply");
    uint64_t value;
    switch (type) {
      case kBoolTrue:
      case kBoolFalse:  // a field's value is in its type; a collection's takes a byte
        return in_collection ? Advance(1) : arrow::Status::OK();
      case kByte:
        return Advance(1);
      case kI16:
      case kI32:
      case kI64:
        return ReadVarint(&value);
      case kDouble:
        return Advance(8);
      case kBinary:
        ARROW_RETURN_NOT_OK(ReadVarint(&value));
        return Advance(value);
      case kList:
      case kSet: {
        uint8_t header;
        ARROW_RETURN_NOT_OK(ReadByte(&header));
        uint64_t count = header >> 4;
        if (count == 15) ARROW_RETURN_NOT_OK(ReadVarint(&count));
        ARROW_RETURN_NOT_OK(CheckCount(count));
        for (uint64_t i = 0; i < count; ++i) {
          ARROW_RETURN_NOT_OK(Skip(header & 0x0f, depth + 1, /*in_collection=*/true));
        }
        return arrow::Status::OK();
      }
      case kMap: {
        uint64_t count;
        ARROW_RETURN_NOT_OK(ReadVarint(&count));
        if (count == 0) return arrow::Status::OK();
        ARROW_RETURN_NOT_OK(CheckCount(count));
        uint8_t types;
        ARROW_RETURN_NOT_OK(ReadByte(&types));
        for (uint64_t i = 0; i < count; ++i) {
          ARROW_RETURN_NOT_OK(Skip(types >> 4, depth + 1, /*in_collection=*/true));
          ARROW_RETURN_NOT_OK(Skip(types & 0x0f, depth + 1, /*in_collection=*/true));
        }
        return arrow::Status::OK();
      }
      case kStruct:
        return SkipStruct(depth);
      default:
        return Malformed("page header value of an unknown type");
    }
  }

  const uint8_t* position_;
  const uint8_t* end_;
};

bool MayCarryCrc(int32_t page_type) {
  return page_type == kDataPage || page_type == kDictionaryPage || page_type == kDataPageV2;
}

}  // namespace

uint32_t PageCrc32(const uint8_t* data, int64_t size) {
  return crc32_gzip_refl(0, data, static_cast<uint64_t>(size));
}

arrow::Status VerifyColumnChunkPages(const uint8_t* data, int64_t size) {
  const uint8_t* end = data + size;
  const uint8_t* page = data;
  while (page != end) {
    CompactReader reader(page, end);
    PageHeader header;
    ARROW_RETURN_NOT_OK(reader.ReadPageHeader(&header));
    if (!header.type || !header.compressed_page_size) {
      return arrow::Status::Invalid("page header without its type or size");
    }
    const uint8_t* body = reader.position();
    if (*header.compressed_page_size < 0 || *header.compressed_page_size > end - body) {
      return arrow::Status::Invalid("page of ", *header.compressed_page_size,
                                    " bytes past its column chunk's end");
    }
    if (header.crc && MayCarryCrc(*header.type) &&
        PageCrc32(body, *header.compressed_page_size) != static_cast<uint32_t>(*header.crc)) {
      return arrow::Status::Invalid("page checksum mismatch (a damaged page)");
    }
    page = body + *header.compressed_page_size;
  }
  return arrow::Status::OK();
}

std::optional<std::pair<int64_t, int64_t>> ColumnChunkRange(
    const parquet::ColumnChunkMetaData& chunk) {
  int64_t start = chunk.data_page_offset();
  if (chunk.has_dictionary_page() && chunk.dictionary_page_offset() > 0 &&
      start > chunk.dictionary_page_offset()) {
    start = chunk.dictionary_page_offset();
  }
  const int64_t length = chunk.total_compressed_size();
  if (start < 0 || length <= 0 || length > std::numeric_limits<int64_t>::max() - start) {
    return std::nullopt;
  }
  return std::make_pair(start, length);
}

arrow::Result<std::shared_ptr<const PageChecksums>> PageChecksums::Make(
    std::shared_ptr<parquet::FileMetaData> metadata) {
  std::shared_ptr<PageChecksums> checksums(new PageChecksums(metadata));
  try {
    for (int group = 0; group < metadata->num_row_groups(); ++group) {
      auto row_group = metadata->RowGroup(group);
      if (row_group->num_columns() != metadata->num_columns()) {
        return Error(ErrorCode::kCorruptObject,
                     "object is not a readable Parquet partition: row group ", group, " has ",
                     row_group->num_columns(), " columns, the schema ", metadata->num_columns());
      }
      for (int column = 0; column < row_group->num_columns(); ++column) {
        // A range Arrow refuses to read needs no entry.
        const auto range = ColumnChunkRange(*row_group->ColumnChunk(column));
        if (!range) continue;
        checksums->chunks_.push_back({range->first, range->second, group, column});
      }
    }
  } catch (const parquet::ParquetException& error) {
    return Error(ErrorCode::kCorruptObject,
                 "object is not a readable Parquet partition: ", error.what());
  }
  auto& chunks = checksums->chunks_;
  std::sort(chunks.begin(), chunks.end(), [](const Chunk& a, const Chunk& b) {
    return a.start != b.start ? a.start < b.start : a.length < b.length;
  });
  if (!chunks.empty()) {
    checksums->first_ = chunks.front().start;
    for (const auto& chunk : chunks) {
      checksums->end_ = std::max(checksums->end_, chunk.start + chunk.length);
    }
  }
  return std::shared_ptr<const PageChecksums>(std::move(checksums));
}

const PageChecksums::Chunk* PageChecksums::Find(int64_t position, int64_t length) const {
  auto chunk = std::lower_bound(chunks_.begin(), chunks_.end(), std::make_pair(position, length),
                                [](const Chunk& chunk, const std::pair<int64_t, int64_t>& read) {
                                  return chunk.start != read.first ? chunk.start < read.first
                                                                   : chunk.length < read.second;
                                });
  if (chunk == chunks_.end() || chunk->start != position || chunk->length != length) return nullptr;
  return &*chunk;
}

arrow::Status PageChecksums::Check(int64_t position, const arrow::Buffer& bytes) const {
  const int64_t length = bytes.size();
  if (length == 0 || position >= end_ || position + length <= first_) return arrow::Status::OK();
  const Chunk* chunk = Find(position, length);
  if (chunk == nullptr) {
    return Error(ErrorCode::kCorruptObject,
                 "object is not a readable Parquet partition: a read of ", length, " bytes at ",
                 position, " is not one column chunk, so its page checksums cannot be verified");
  }
  auto verified = VerifyColumnChunkPages(bytes.data(), length);
  if (verified.ok()) return verified;
  return Error(ErrorCode::kCorruptObject,
               "object is not a readable Parquet partition: ", verified.message(), " in column '",
               metadata_->schema()->Column(chunk->column)->path()->ToDotString(), "' of row group ",
               chunk->row_group);
}

}  // namespace skyhook
