#include "skyhook/storage/object/object_file.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <arrow/buffer.h>
#include <arrow/util/future.h>

namespace skyhook {

arrow::Result<std::shared_ptr<ObjectFile>> ObjectFile::Open(ObjectContext* object) {
  ARROW_ASSIGN_OR_RAISE(uint64_t size, object->Size());
  return OpenExtent(object, 0, size);
}

arrow::Result<std::shared_ptr<ObjectFile>> ObjectFile::OpenExtent(ObjectContext* object,
                                                                  uint64_t offset,
                                                                  uint64_t length) {
  ARROW_ASSIGN_OR_RAISE(uint64_t size, object->Size());
  if (length > size || offset > size - length ||
      length > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return arrow::Status::IOError("extent of ", length, " bytes at ", offset,
                                  " ends past the object's ", size, " bytes");
  }
  return std::shared_ptr<ObjectFile>(new ObjectFile(object, offset, static_cast<int64_t>(length)));
}

arrow::Status ObjectFile::Close() {
  closed_ = true;
  return arrow::Status::OK();
}

bool ObjectFile::closed() const { return closed_; }

arrow::Result<int64_t> ObjectFile::Tell() const { return position_; }

arrow::Status ObjectFile::Seek(int64_t position) {
  if (position < 0 || position > size_) {
    return arrow::Status::IOError("seek to ", position, " outside object of ", size_, " bytes");
  }
  position_ = position;
  return arrow::Status::OK();
}

arrow::Result<int64_t> ObjectFile::GetSize() { return size_; }

arrow::Result<std::shared_ptr<arrow::Buffer>> ObjectFile::ReadAt(int64_t position, int64_t nbytes) {
  if (closed_) return arrow::Status::Invalid("object file is closed");
  if (position < 0 || nbytes < 0) {
    return arrow::Status::IOError("invalid read of ", nbytes, " bytes at ", position);
  }
  // Readers of a corrupt file may ask for ranges beyond the end: clamp, as a file would.
  int64_t available = std::max<int64_t>(0, size_ - position);
  int64_t length = std::min(nbytes, available);
  if (length == 0) return std::make_shared<arrow::Buffer>(nullptr, 0);
  std::shared_ptr<arrow::Buffer> buffer;
  auto cached = small_reads_.find({position, length});
  if (cached != small_reads_.end()) {
    buffer = cached->second;
  } else {
    ARROW_ASSIGN_OR_RAISE(buffer, object_->Read(start_ + static_cast<uint64_t>(position), length));
    bytes_read_ += buffer->size();
  }
  // Checked on every read, cached or not: a small read kept before the
  // checksums were known (a footer) may be what a corrupt footer calls a chunk.
  if (checksums_ != nullptr) ARROW_RETURN_NOT_OK(Verify(position, *buffer));
  if (cached != small_reads_.end()) return buffer;
  // Footers are read again by every reader opened on the file (a check, then
  // Arrow's reader once per column set): keep small reads, read them once.
  if (length <= kSmallRead && small_read_bytes_ + length <= kSmallReadsKept) {
    small_reads_[{position, length}] = buffer;
    small_read_bytes_ += length;
  }
  return buffer;
}

arrow::Status ObjectFile::Verify(int64_t position, const arrow::Buffer& bytes) {
  VerifiedChunks* verified = object_->verified_chunks();
  const bool chunk = verified != nullptr && checksums_->IsChunk(position, bytes.size());
  const uint64_t offset = start_ + static_cast<uint64_t>(position);  // in the object
  if (chunk && verified->Contains(offset, bytes.size())) return arrow::Status::OK();
  ARROW_RETURN_NOT_OK(checksums_->Check(position, bytes));
  if (chunk) verified->Add(offset, bytes.size());
  return arrow::Status::OK();
}

arrow::Result<int64_t> ObjectFile::ReadAt(int64_t position, int64_t nbytes, void* out) {
  ARROW_ASSIGN_OR_RAISE(auto buffer, ReadAt(position, nbytes));
  if (buffer->size() > 0) std::memcpy(out, buffer->data(), buffer->size());
  return buffer->size();
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ObjectFile::Read(int64_t nbytes) {
  ARROW_ASSIGN_OR_RAISE(auto buffer, ReadAt(position_, nbytes));
  position_ += buffer->size();
  return buffer;
}

arrow::Result<int64_t> ObjectFile::Read(int64_t nbytes, void* out) {
  ARROW_ASSIGN_OR_RAISE(int64_t n, ReadAt(position_, nbytes, out));
  position_ += n;
  return n;
}

arrow::Future<std::shared_ptr<arrow::Buffer>> ObjectFile::ReadAsync(
    const arrow::io::IOContext& context, int64_t position, int64_t nbytes) {
  return ReadAsync(context, position, nbytes, /*allow_short_read=*/true);
}

arrow::Future<std::shared_ptr<arrow::Buffer>> ObjectFile::ReadAsync(const arrow::io::IOContext&,
                                                                    int64_t position,
                                                                    int64_t nbytes,
                                                                    bool allow_short_read) {
  auto read = ReadAt(position, nbytes);
  if (read.ok() && !allow_short_read && (*read)->size() < nbytes) {
    return arrow::Future<std::shared_ptr<arrow::Buffer>>::MakeFinished(
        arrow::Status::IOError("read ", (*read)->size(), " of ", nbytes, " bytes at ", position));
  }
  return arrow::Future<std::shared_ptr<arrow::Buffer>>::MakeFinished(std::move(read));
}

}  // namespace skyhook
