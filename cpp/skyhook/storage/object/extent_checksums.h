// Checksums of every byte of an extent (CRC-32C, the checksum BlueStore
// keeps), written with every object, so that no reader uses a damaged byte of
// any format: row and IPC objects have no checksums of their own, and
// Parquet's page checksums leave footers and page headers out.
//
// An extent is its format's data, a table of one CRC per chunk of that data,
// then its format's footer (a file whose footer offsets pass the table by, so
// the extent stays a file any Parquet or IPC reader reads). The design
// attribute holds where the table starts and the CRC of everything from there
// (table and footer); a row object, read whole, is all "tail". A read of the
// extent (object_file.h) is widened to whole chunks, each checked before its
// bytes reach a decoder.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <arrow/io/memory.h>
#include <arrow/result.h>
#include <arrow/status.h>

namespace skyhook {

struct ExtentChecksums {
  /// Bytes per chunk of the data before the table (the last may be shorter).
  int64_t chunk_bytes = 0;
  /// Where the table starts in the extent: the data's length.
  uint64_t table_offset = 0;
  /// CRC-32C of [table_offset, the extent's end): the table and the footer.
  uint32_t tail_crc = 0;

  bool operator==(const ExtentChecksums&) const = default;
  /// Chunks of the data: CRCs in the table.
  uint64_t chunks() const;
  uint64_t table_bytes() const { return 4 * chunks(); }
};

/// Bytes per data chunk of new extents: small, since every read is widened to
/// whole chunks (plain reads fetch single column chunks, IPC readers single
/// buffers); the table is 1/1024 of the data.
constexpr int64_t kChunkBytes = 4 * 1024;
/// Bounds a design's checksums must keep (a damaged attribute is not trusted).
constexpr int64_t kMinChunkBytes = 4 * 1024;
constexpr int64_t kMaxChunkBytes = 16 * 1024 * 1024;

uint32_t Crc32c(const uint8_t* data, int64_t size, uint32_t crc = 0);

/// Whether checksums can describe an extent of length bytes.
bool DescribesExtent(const ExtentChecksums& checksums, uint64_t length);

/// An output stream that keeps what is written (as BufferOutputStream does)
/// and the CRC of every chunk of it, for writers of formats with a footer: the
/// data is written, then WriteTable, then the footer.
class ChecksummingSink : public arrow::io::OutputStream {
 public:
  static arrow::Result<std::shared_ptr<ChecksummingSink>> Make(int64_t chunk_bytes,
                                                               arrow::MemoryPool* pool);

  arrow::Status Write(const void* data, int64_t nbytes) override;
  using arrow::io::OutputStream::Write;
  arrow::Result<int64_t> Tell() const override { return position_; }
  arrow::Status Close() override { return arrow::Status::OK(); }
  bool closed() const override { return false; }

  /// Writes the table of the chunks written so far (their data ends here);
  /// then only the footer may follow.
  arrow::Status WriteTable();
  /// The extent written, and its checksums. Call once, after the footer.
  arrow::Result<std::shared_ptr<arrow::Buffer>> Finish(ExtentChecksums* checksums);

 private:
  ChecksummingSink(std::shared_ptr<arrow::io::BufferOutputStream> bytes, int64_t chunk_bytes)
      : bytes_(std::move(bytes)), chunk_bytes_(chunk_bytes) {}

  std::shared_ptr<arrow::io::BufferOutputStream> bytes_;
  int64_t chunk_bytes_;
  int64_t position_ = 0;
  std::vector<uint32_t> crcs_;  // of the chunks so far, the last one open
  std::optional<uint64_t> table_offset_;
  uint32_t tail_crc_ = 0;
};

/// The checksums of an extent that is all tail (a row object: read whole).
ExtentChecksums WholeExtentChecksums(const arrow::Buffer& extent);

/// The table's CRCs, from the tail's first bytes (the tail checked already).
std::vector<uint32_t> TableCrcs(const ExtentChecksums& checksums, const arrow::Buffer& tail);

}  // namespace skyhook
