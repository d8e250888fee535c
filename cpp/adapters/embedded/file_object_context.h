// MutableObjectContext over a file of the embedded store: the object's bytes
// are a memory-mapped file (reads are views, no copies; the mapping kept for
// the next calls while the file is unchanged, mapped_objects.h), its attributes are
// the file's "user." extended attributes, written atomically with it, and its
// omap is in the store's OmapDatabase, opened only when a method uses the omap.
// Bytes and attributes are read from the one file mapped first, so a context
// never mixes an object with the one that replaced it; ReplaceObject locks
// the object's file (flock) as the client's guarded replace does
// (python/skyhook/backends/embedded.py).
#pragma once

#include <memory>
#include <string>

#include <arrow/io/file.h>

#include "omap_database.h"
#include "skyhook/storage/object/mutable_object_context.h"

namespace skyhook {

class FileObjectContext : public MutableObjectContext {
 public:
  FileObjectContext(std::string path, std::string omap_database)
      : path_(std::move(path)), omap_database_(std::move(omap_database)) {}

  arrow::Result<uint64_t> Size() override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(uint64_t offset, uint64_t length) override;
  arrow::Result<std::optional<std::string>> GetXattr(const std::string& name) override;

  arrow::Status ReplaceObject(const arrow::Buffer& data,
                              const std::map<std::string, std::string>& attributes,
                              const AttributeGuard& guard) override;
  arrow::Status WriteFull(const arrow::Buffer& data) override;
  arrow::Status Append(const arrow::Buffer& data) override;
  arrow::Status Truncate(uint64_t size) override;
  arrow::Status SetXattr(const std::string& name, const std::string& value) override;
  arrow::Result<std::optional<std::string>> GetOmap(const std::string& key) override;
  arrow::Status SetOmap(const std::string& key, const std::string& value) override;
  arrow::Status RemoveOmap(const std::string& key) override;
  arrow::Status UpdateOmap(const std::vector<std::string>& remove,
                           const std::map<std::string, std::string>& set) override;
  VerifiedChunks* verified_chunks() override { return verified_.get(); }

 private:
  arrow::Result<std::shared_ptr<arrow::io::MemoryMappedFile>> Mapped();
  /// The object's size, 0 when it does not exist yet.
  arrow::Result<uint64_t> SizeOrZero() const;
  /// Makes the object its first `keep` bytes, then `tail`, cut or zero-extended to `size`.
  arrow::Status Replace(uint64_t keep, const arrow::Buffer& tail, uint64_t size);
  arrow::Result<OmapDatabase*> Omap();
  /// The object's name in the omap database: its file name.
  std::string Name() const;

  std::string path_;
  std::string omap_database_;
  std::shared_ptr<arrow::io::MemoryMappedFile> file_;
  std::shared_ptr<VerifiedChunks> verified_;  // the kept mapping's (mapped_objects.h)
  std::unique_ptr<OmapDatabase> omap_;
};

}  // namespace skyhook
