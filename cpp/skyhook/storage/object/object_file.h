// A read-only arrow::io::RandomAccessFile view of one object, or of one extent
// (byte range) of it, so that Arrow's Parquet and IPC readers can read it
// through the ObjectContext: a read of the view is a ranged read of the object
// (cls_cxx_read in the OSD, a view of the mapped file in the embedded store).
// It counts the bytes the readers actually pulled from storage, and reads
// small ranges (footers, message headers) only once.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <arrow/io/interfaces.h>

#include "skyhook/storage/object/extent_checksums.h"
#include "skyhook/storage/object/object_context.h"
#include "skyhook/storage/object/object_design.h"
#include "skyhook/storage/object/page_checksums.h"

namespace skyhook {

class ObjectFile : public arrow::io::RandomAccessFile {
 public:
  static arrow::Result<std::shared_ptr<ObjectFile>> Open(ObjectContext* object);
  /// The view of [offset, offset + length); IOError if it ends past the object.
  static arrow::Result<std::shared_ptr<ObjectFile>> OpenExtent(ObjectContext* object,
                                                               uint64_t offset, uint64_t length);
  /// The view of a column group's extent, its reads verified by the group's
  /// checksums when it has them (VerifyExtent).
  static arrow::Result<std::shared_ptr<ObjectFile>> OpenExtent(ObjectContext* object,
                                                               const ColumnGroup& group);

  arrow::Status Close() override;
  bool closed() const override;
  arrow::Result<int64_t> Tell() const override;
  arrow::Status Seek(int64_t position) override;
  arrow::Result<int64_t> GetSize() override;
  /// Reads are views of what the adapter read: Arrow's readers then slice them
  /// instead of allocating what a (possibly corrupt) length field says.
  bool supports_zero_copy() const override { return true; }
  arrow::Result<int64_t> Read(int64_t nbytes, void* out) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(int64_t nbytes) override;
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t nbytes, void* out) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t nbytes) override;
  /// Synchronous: Arrow would read on its I/O threads, but an object class may
  /// read only on the caller's thread, and a reader that the I/O thread released
  /// last freed the call's memory (an IPC file's dictionaries) after the call.
  using arrow::io::RandomAccessFile::ReadAsync;
  arrow::Future<std::shared_ptr<arrow::Buffer>> ReadAsync(const arrow::io::IOContext& context,
                                                          int64_t position,
                                                          int64_t nbytes) override;
  arrow::Future<std::shared_ptr<arrow::Buffer>> ReadAsync(const arrow::io::IOContext& context,
                                                          int64_t position, int64_t nbytes,
                                                          bool allow_short_read) override;

  /// [position, position + length) of the extent widened to the whole chunks a
  /// verified read of it reads (itself when reads are not verified).
  std::pair<int64_t, int64_t> ReadSpan(int64_t position, int64_t length) const;

  int64_t bytes_read() const { return bytes_read_; }
  /// Where the view starts in the object, and its bytes.
  uint64_t start() const { return start_; }
  int64_t size() const { return size_; }

  /// From now on, reads of the Parquet file's column chunks are verified
  /// (page_checksums.h): readers opened on this file need not check pages.
  void VerifyPages(std::shared_ptr<const PageChecksums> checksums) {
    checksums_ = std::move(checksums);
  }

  /// From now on reads are checked by the extent's checksums (extent_checksums.h):
  /// its tail (table and footer) read whole and checked at the first read, reads of
  /// its data widened to whole chunks, each checked once per file. checksums must
  /// describe the extent (DescribesExtent).
  void VerifyExtent(const ExtentChecksums& checksums) { extent_checksums_ = checksums; }
  bool verifies_extent() const { return extent_checksums_.has_value(); }
  /// The first checksum mismatch a read of this file met (OK if none): a reader
  /// that wraps the error it got (Arrow's IPC reader does) reports this instead.
  const arrow::Status& damage() const { return damage_; }

 private:
  ObjectFile(ObjectContext* object, uint64_t start, int64_t size)
      : object_(object), start_(start), size_(size) {}

  /// bytes read at position checked against checksums_, unless the object
  /// already saw them verified as that chunk (verified_chunks.h).
  arrow::Status Verify(int64_t position, const arrow::Buffer& bytes);
  /// [position, position + length) of the extent, checked (VerifyExtent).
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadVerified(int64_t position, int64_t length);
  /// Of the data before the table: read as whole chunks, each checked.
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadChunks(int64_t position, int64_t length);
  /// Reads and checks the tail and its table, once.
  arrow::Status LoadTail();
  int64_t data_end() const { return static_cast<int64_t>(extent_checksums_->table_offset); }

  static constexpr int64_t kSmallRead = 64 * 1024;
  static constexpr int64_t kSmallReadsKept = 256 * 1024;

  /// status, remembered as damage_ when it is the first mismatch.
  arrow::Status Damaged(arrow::Status status);

  ObjectContext* object_;
  arrow::Status damage_;
  uint64_t start_;  // of the view in the object
  int64_t size_;
  std::map<std::pair<int64_t, int64_t>, std::shared_ptr<arrow::Buffer>> small_reads_;
  int64_t small_read_bytes_ = 0;
  std::shared_ptr<const PageChecksums> checksums_;
  std::optional<ExtentChecksums> extent_checksums_;
  std::shared_ptr<arrow::Buffer> tail_;  // checked
  std::vector<uint32_t> table_crcs_;
  std::vector<bool> chunk_verified_;
  // The chunks read last: Arrow's IPC reader reads a batch's buffers one by one.
  std::shared_ptr<arrow::Buffer> last_chunks_;
  int64_t last_chunks_start_ = 0;
  int64_t position_ = 0;
  int64_t bytes_read_ = 0;
  bool closed_ = false;
};

}  // namespace skyhook
