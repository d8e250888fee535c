// The one interface every storage-side method is written against: access to a
// single object (its bytes, attributes and omap). The Ceph object class and the embedded store each
// adapt it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <arrow/buffer.h>
#include <arrow/result.h>
#include <arrow/status.h>

#include "skyhook/storage/object/verified_chunks.h"

namespace skyhook {

class ObjectContext {
 public:
  virtual ~ObjectContext() = default;

  /// Size of the object in bytes; NotFound (IOError) if it does not exist.
  virtual arrow::Result<uint64_t> Size() = 0;

  /// Read [offset, offset + length); may return fewer bytes at the end.
  /// Adapters return views of memory they already hold where they can.
  virtual arrow::Result<std::shared_ptr<arrow::Buffer>> Read(uint64_t offset, uint64_t length) = 0;

  /// An extended attribute of the object, or nullopt when it is not set.
  virtual arrow::Result<std::optional<std::string>> GetXattr(const std::string& name) = 0;

  /// The omap's value of `key`, or nullopt when it has none. Readers may use
  /// it too: statistics and indexes live there (storage/secondary/).
  virtual arrow::Result<std::optional<std::string>> GetOmap(const std::string& key) = 0;

  /// The chunks of this object verified while its bytes are known unchanged
  /// (verified_chunks.h), or nullptr: then every chunk read is verified.
  virtual VerifiedChunks* verified_chunks() { return nullptr; }
};

}  // namespace skyhook
