// Decoded requests kept across calls: a query sends the same filter,
// projection or plan bytes to each of its objects, and checking and
// deserialising them cost every call as much again. A small process-wide
// cache (one per kind of value) maps a request part's exact bytes (compared
// whole, not by hash) to its decoded, validated form. Only pure functions of
// those bytes are kept; what fails validation is never kept, so it fails the
// same way every time. Values are shared between concurrent calls (an OSD's
// op threads) and must not be changed after they are kept.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <arrow/result.h>

namespace skyhook {

template <typename Value>
class DecodedRequests {
 public:
  // A query's parts fit many times over (a filter or plan is a few KiB; its
  // decoded form some times that); a key over a tenth of the bytes is decoded
  // every call rather than evict the rest.
  static constexpr size_t kMaxEntries = 64;
  static constexpr int64_t kMaxBytes = int64_t{1} << 20;

  /// The process's cache of this kind (never destroyed: calls may run while the process exits).
  static DecodedRequests* Process() {
    static auto* cache = new DecodedRequests();
    return cache;
  }

  /// The value kept for `key`, else decode()'s (which decodes key's bytes), kept when it succeeds.
  template <typename Decode>
  arrow::Result<std::shared_ptr<const Value>> GetOrDecode(std::string_view key, Decode&& decode) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto found = entries_.find(key);
      if (found != entries_.end()) {
        found->second.last_used = ++clock_;
        return found->second.value;
      }
    }
    // Decoded outside the lock: two calls may both decode a new key; one is kept.
    arrow::Result<Value> decoded = decode();
    ARROW_RETURN_NOT_OK(decoded.status());
    auto value = std::make_shared<const Value>(std::move(*decoded));
    if (static_cast<int64_t>(key.size()) * 10 > kMaxBytes) return value;
    std::lock_guard<std::mutex> lock(mutex_);
    while (!entries_.empty() && (entries_.size() >= kMaxEntries ||
                                 bytes_ + static_cast<int64_t>(key.size()) > kMaxBytes)) {
      EvictLeastRecent();
    }
    auto [entry, inserted] = entries_.emplace(std::string(key), Entry{value, ++clock_});
    if (inserted) bytes_ += static_cast<int64_t>(key.size());
    return entry->second.value;
  }

 private:
  struct Entry {
    std::shared_ptr<const Value> value;
    uint64_t last_used = 0;
  };

  void EvictLeastRecent() {
    auto oldest = entries_.begin();
    for (auto entry = entries_.begin(); entry != entries_.end(); ++entry) {
      if (entry->second.last_used < oldest->second.last_used) oldest = entry;
    }
    bytes_ -= static_cast<int64_t>(oldest->first.size());
    entries_.erase(oldest);
  }

  std::mutex mutex_;
  std::map<std::string, Entry, std::less<>> entries_;  // heterogeneous lookup by string_view
  int64_t bytes_ = 0;
  uint64_t clock_ = 0;
};

}  // namespace skyhook
