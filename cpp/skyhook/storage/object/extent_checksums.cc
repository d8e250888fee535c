#include "skyhook/storage/object/extent_checksums.h"

#include <algorithm>

#include <arrow/io/memory.h>
#include <isa-l/crc.h>

#include "skyhook/errors/error.h"

namespace skyhook {

uint32_t Crc32c(const uint8_t* data, int64_t size, uint32_t crc) {
  // ISA-L's iSCSI CRC is CRC-32C before its customary final XOR; chained through crc.
  return crc32_iscsi(const_cast<uint8_t*>(data), static_cast<int>(size), crc ^ 0xFFFFFFFFu) ^
         0xFFFFFFFFu;
}

uint64_t ExtentChecksums::chunks() const {
  if (chunk_bytes <= 0) return 0;
  const auto chunk = static_cast<uint64_t>(chunk_bytes);
  return (table_offset + chunk - 1) / chunk;
}

bool DescribesExtent(const ExtentChecksums& checksums, uint64_t length) {
  return checksums.chunk_bytes >= kMinChunkBytes && checksums.chunk_bytes <= kMaxChunkBytes &&
         checksums.table_offset <= length &&
         checksums.table_bytes() <= length - checksums.table_offset;
}

arrow::Result<std::shared_ptr<ChecksummingSink>> ChecksummingSink::Make(int64_t chunk_bytes,
                                                                        arrow::MemoryPool* pool) {
  ARROW_ASSIGN_OR_RAISE(auto bytes, arrow::io::BufferOutputStream::Create(4096, pool));
  return std::shared_ptr<ChecksummingSink>(new ChecksummingSink(std::move(bytes), chunk_bytes));
}

arrow::Status ChecksummingSink::Write(const void* data, int64_t nbytes) {
  ARROW_RETURN_NOT_OK(bytes_->Write(data, nbytes));
  const auto* next = static_cast<const uint8_t*>(data);
  int64_t left = nbytes;
  if (table_offset_) {
    tail_crc_ = Crc32c(next, left, tail_crc_);
    position_ += nbytes;
    return arrow::Status::OK();
  }
  while (left > 0) {
    const int64_t in_chunk = position_ % chunk_bytes_;
    if (in_chunk == 0) crcs_.push_back(0);
    const int64_t take = std::min(left, chunk_bytes_ - in_chunk);
    crcs_.back() = Crc32c(next, take, crcs_.back());
    next += take;
    left -= take;
    position_ += take;
  }
  return arrow::Status::OK();
}

arrow::Status ChecksummingSink::WriteTable() {
  std::string table;
  for (uint32_t crc : crcs_) {
    for (int shift = 0; shift < 32; shift += 8) table.push_back(static_cast<char>(crc >> shift));
  }
  // IPC messages that follow must start 8-byte aligned.
  table.resize((table.size() + 7) / 8 * 8, '\0');
  table_offset_ = static_cast<uint64_t>(position_);
  return Write(table.data(), static_cast<int64_t>(table.size()));
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ChecksummingSink::Finish(ExtentChecksums* checksums) {
  if (!table_offset_) return arrow::Status::Invalid("an extent's checksum table was not written");
  *checksums = ExtentChecksums{chunk_bytes_, *table_offset_, tail_crc_};
  return bytes_->Finish();
}

ExtentChecksums WholeExtentChecksums(const arrow::Buffer& extent) {
  return ExtentChecksums{kChunkBytes, 0, Crc32c(extent.data(), extent.size())};
}

std::vector<uint32_t> TableCrcs(const ExtentChecksums& checksums, const arrow::Buffer& tail) {
  std::vector<uint32_t> crcs;
  const uint8_t* next = tail.data();
  for (uint64_t c = 0; c < checksums.chunks(); ++c, next += 4) {
    crcs.push_back(static_cast<uint32_t>(next[0]) | static_cast<uint32_t>(next[1]) << 8 |
                   static_cast<uint32_t>(next[2]) << 16 | static_cast<uint32_t>(next[3]) << 24);
  }
  return crcs;
}

}  // namespace skyhook
