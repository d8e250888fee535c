// Column chunks of one object whose pages' checksums were verified
// (page_checksums.h) while its adapter can vouch that the object's bytes have
// not changed since: the embedded store's kept mapping of an unchanged file
// (mapped_objects.h). A query reads every chunk of its columns in each call;
// verified once per mapping instead of once per call. Only what a chunk's
// bytes alone decide is kept (a valid run of pages whose CRCs match): whether
// a read is a chunk at all is still decided by the file's own footer, on
// every read. Thread-safe: calls on one object run concurrently.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <utility>

namespace skyhook {

class VerifiedChunks {
 public:
  /// Chunks remembered at most per object; past it, the rest are verified on every read.
  static constexpr size_t kMaxChunks = 1 << 16;

  /// [offset, offset + length) of the object was verified as one chunk.
  bool Contains(uint64_t offset, uint64_t length) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return chunks_.count({offset, length}) > 0;
  }

  void Add(uint64_t offset, uint64_t length) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (chunks_.size() < kMaxChunks) chunks_.emplace(offset, length);
  }

 private:
  mutable std::mutex mutex_;
  std::set<std::pair<uint64_t, uint64_t>> chunks_;
};

}  // namespace skyhook
