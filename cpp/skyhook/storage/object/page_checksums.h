// Parquet page checksums, verified by storage itself with ISA-L's CRC-32
// (carry-less multiply, >10 GB/s) instead of Arrow's software CRC (~2 GB/s):
// Arrow's check is turned off and every column chunk Arrow reads through the
// ObjectFile is verified in the bytes of that one read, before Arrow decodes
// them. Arrow (26, no pre-buffering, no buffered stream) reads a column chunk
// as one ReadAt of [chunk start, + total_compressed_size); a read of any other
// shape within the chunks is refused, so verification is never silently skipped.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/result.h>
#include <arrow/status.h>
#include <parquet/metadata.h>

namespace skyhook {

/// CRC-32 exactly as zlib's crc32(0, data, size) (IEEE, reflected): what
/// Parquet's PageHeader.crc holds.
uint32_t PageCrc32(const uint8_t* data, int64_t size);

/// Walks the pages of one column chunk (Thrift compact PageHeaders, every
/// length bounded by the chunk, nesting bounded) and checks the CRC of each
/// data (v1, v2) and dictionary page that has one, over its compressed_page_size
/// bytes after the header (for v2, levels included: the Parquet spec). Pages end
/// exactly at the chunk's end. Invalid with the reason otherwise.
arrow::Status VerifyColumnChunkPages(const uint8_t* data, int64_t size);

/// The byte range [start, start + length) of a file that Arrow's reader reads
/// as one column chunk (SerializedRowGroup::GetColumnPageReader); nullopt for
/// one it refuses (negative, empty, overflowing). Throws what parquet's
/// accessors throw.
std::optional<std::pair<int64_t, int64_t>> ColumnChunkRange(
    const parquet::ColumnChunkMetaData& chunk);

/// The column chunks of one Parquet file, as Arrow's reader reads them.
class PageChecksums {
 public:
  static arrow::Result<std::shared_ptr<const PageChecksums>> Make(
      std::shared_ptr<parquet::FileMetaData> metadata);

  /// OK for a read outside every chunk (footer, page index); for a read of
  /// exactly one chunk, its pages verified; any other read overlapping the
  /// chunks is refused. Failures are corrupt-object errors naming the column
  /// and row group.
  arrow::Status Check(int64_t position, const arrow::Buffer& bytes) const;

  /// [position, position + length) is exactly one column chunk.
  bool IsChunk(int64_t position, int64_t length) const { return Find(position, length) != nullptr; }

 private:
  struct Chunk {
    int64_t start;
    int64_t length;
    int row_group;
    int column;
  };

  const Chunk* Find(int64_t position, int64_t length) const;

  explicit PageChecksums(std::shared_ptr<parquet::FileMetaData> metadata)
      : metadata_(std::move(metadata)) {}

  std::shared_ptr<parquet::FileMetaData> metadata_;  // for column names in errors
  std::vector<Chunk> chunks_;                        // by start, then length
  int64_t first_ = 0;                                // [first_, end_): what the chunks cover
  int64_t end_ = 0;
};

}  // namespace skyhook
