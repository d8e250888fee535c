#include "skyhook/storage/object/object_file.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <arrow/buffer.h>
#include <arrow/util/future.h>

#include "skyhook/errors/error.h"

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

arrow::Result<std::shared_ptr<ObjectFile>> ObjectFile::OpenExtent(ObjectContext* object,
                                                                  const ColumnGroup& group) {
  ARROW_ASSIGN_OR_RAISE(auto file, OpenExtent(object, group.offset, group.length));
  // ParseDesign checked that they describe the extent; a design built in memory is trusted.
  if (group.checksums && DescribesExtent(*group.checksums, group.length)) {
    file->VerifyExtent(*group.checksums);
  }
  return file;
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
  } else if (extent_checksums_) {
    ARROW_ASSIGN_OR_RAISE(buffer, ReadVerified(position, length));
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

std::pair<int64_t, int64_t> ObjectFile::ReadSpan(int64_t position, int64_t length) const {
  if (!extent_checksums_) return {position, length};
  const int64_t chunk = extent_checksums_->chunk_bytes;
  const int64_t end = position + length;
  const int64_t start = position < data_end() ? position / chunk * chunk : data_end();
  const int64_t stop =
      end <= data_end() ? std::min(data_end(), (end + chunk - 1) / chunk * chunk) : size_;
  return {start, stop - start};
}

arrow::Status ObjectFile::Damaged(arrow::Status status) {
  if (damage_.ok()) damage_ = status;
  return status;
}

arrow::Status ObjectFile::LoadTail() {
  if (tail_ != nullptr) return arrow::Status::OK();
  ARROW_ASSIGN_OR_RAISE(auto tail, object_->Read(start_ + extent_checksums_->table_offset,
                                                 static_cast<uint64_t>(size_ - data_end())));
  bytes_read_ += tail->size();
  if (tail->size() != size_ - data_end() ||
      Crc32c(tail->data(), tail->size()) != extent_checksums_->tail_crc) {
    return Damaged(Error(ErrorCode::kCorruptObject,
                         "checksum mismatch in the footer of the extent at ", start_,
                         " (damaged data)"));
  }
  table_crcs_ = TableCrcs(*extent_checksums_, *tail);
  chunk_verified_.assign(table_crcs_.size(), false);
  tail_ = std::move(tail);
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ObjectFile::ReadVerified(int64_t position,
                                                                       int64_t length) {
  ARROW_RETURN_NOT_OK(LoadTail());
  const int64_t end = position + length;
  std::shared_ptr<arrow::Buffer> data, tail;
  if (position < data_end()) {
    ARROW_ASSIGN_OR_RAISE(data, ReadChunks(position, std::min(end, data_end()) - position));
  }
  if (end > data_end()) {
    const int64_t from = std::max(position, data_end());
    tail = arrow::SliceBuffer(tail_, from - data_end(), end - from);
  }
  if (data == nullptr || tail == nullptr) return data != nullptr ? data : tail;
  return arrow::ConcatenateBuffers({data, tail});
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ObjectFile::ReadChunks(int64_t position,
                                                                     int64_t length) {
  if (last_chunks_ != nullptr && position >= last_chunks_start_ &&
      position + length <= last_chunks_start_ + last_chunks_->size()) {
    return arrow::SliceBuffer(last_chunks_, position - last_chunks_start_, length);
  }
  const int64_t chunk = extent_checksums_->chunk_bytes;
  const int64_t first = position / chunk;
  const auto [start, span] = ReadSpan(position, length);
  const int64_t end = start + span;
  // A small read that goes on from the last one (a message, then its body) reads only what
  // follows it; a large one reads its first chunk again rather than copying what follows.
  const int64_t last_end = last_chunks_ ? last_chunks_start_ + last_chunks_->size() : 0;
  const bool goes_on = last_chunks_ != nullptr && start >= last_chunks_start_ && start < last_end &&
                       end - last_end <= kSmallRead;
  const int64_t from = goes_on ? last_end : start;
  ARROW_ASSIGN_OR_RAISE(auto chunks, object_->Read(start_ + static_cast<uint64_t>(from),
                                                   static_cast<uint64_t>(end - from)));
  bytes_read_ += chunks->size();
  if (chunks->size() != end - from) {
    return Error(ErrorCode::kCorruptObject, "the extent at ", start_, " ends before its ", size_,
                 " bytes");
  }
  if (goes_on) {
    ARROW_ASSIGN_OR_RAISE(
        chunks, arrow::ConcatenateBuffers(
                    {arrow::SliceBuffer(last_chunks_, start - last_chunks_start_), chunks}));
  }
  // Chunks already checked by this file are not again (CRC-32C runs at memory speed: a
  // per-object memory of 4 KiB chunks would cost more than it saves).
  for (int64_t index = first; index * chunk < end; ++index) {
    if (chunk_verified_[static_cast<size_t>(index)]) continue;
    const int64_t size = std::min(chunk, end - index * chunk);
    if (Crc32c(chunks->data() + (index * chunk - start), size) !=
        table_crcs_[static_cast<size_t>(index)]) {
      return Damaged(Error(ErrorCode::kCorruptObject, "checksum mismatch in bytes ", index * chunk,
                           "..", index * chunk + size, " of the extent at ", start_,
                           " (damaged data)"));
    }
    chunk_verified_[static_cast<size_t>(index)] = true;
  }
  last_chunks_ = chunks;
  last_chunks_start_ = start;
  return arrow::SliceBuffer(chunks, position - start, length);
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
