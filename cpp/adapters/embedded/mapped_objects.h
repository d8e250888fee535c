// Read-only mappings of the embedded store's object files kept across calls:
// a query calls every object in turn, and mapping a file, faulting its pages
// into the mapping and unmapping it again cost each call ~3 % of the query's
// CPU. Objects are never changed in place by the store (it renames a new file
// over the old one), but anything may write them; so a kept mapping serves a
// call only when the file now at the path is the one it maps, unchanged:
// same device and inode (the kept mapping holds the inode, so its number is
// not reused), size, mtime and ctime. A file changed in any of these is mapped
// anew; one truncated under a kept mapping is never read through it. A kept
// mapping also keeps the column chunks verified through it (verified_chunks.h).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <arrow/io/file.h>
#include <arrow/result.h>

#include "skyhook/storage/object/verified_chunks.h"

namespace skyhook {

/// A read-only mapping of an object file, and the chunks verified through it
/// while it is kept (nullptr for a mapping of this call only).
struct MappedObject {
  std::shared_ptr<arrow::io::MemoryMappedFile> file;
  std::shared_ptr<VerifiedChunks> verified;
};

class MappedObjects {
 public:
  /// Mappings kept at most, whatever their bytes: each holds a descriptor.
  static constexpr size_t kMaxMappings = 256;

  explicit MappedObjects(int64_t max_bytes) : max_bytes_(max_bytes) {}

  /// The process's mappings, at most SKYHOOK_MAPPED_OBJECTS_MB (read at the
  /// first call; never destroyed: replies may outlive the process's exit).
  static MappedObjects* Process();

  /// A read-only mapping of the file now at `path`: a kept one if it maps that
  /// very file, unchanged, otherwise a new one (kept if it fits).
  arrow::Result<MappedObject> Open(const std::string& path);

  int64_t mapped_bytes() const;
  size_t mappings() const;

 private:
  struct Identity {
    dev_t device;
    ino_t inode;
    off_t size;
    int64_t mtime_ns;
    int64_t ctime_ns;
    bool operator==(const Identity& other) const;
  };
  struct Mapping {
    Identity identity;
    std::shared_ptr<arrow::io::MemoryMappedFile> file;
    std::shared_ptr<VerifiedChunks> verified;
    std::list<std::string>::iterator recent;  // its place in recent_
  };

  static Identity Of(const struct stat& status);
  /// The kept mapping's verified chunks; nullptr when it is too large to keep.
  std::shared_ptr<VerifiedChunks> Keep(const std::string& path, const Identity& identity,
                                       std::shared_ptr<arrow::io::MemoryMappedFile> file);
  void Drop(std::unordered_map<std::string, Mapping>::iterator mapping);

  const int64_t max_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Mapping> mappings_;
  std::list<std::string> recent_;  // paths, most recently used first
  int64_t bytes_ = 0;
};

}  // namespace skyhook
