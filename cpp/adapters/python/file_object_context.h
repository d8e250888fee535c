// ObjectContext over a file of the embedded store: the object's bytes are a
// memory-mapped file (reads are views, no copies) and its attributes are the
// file's "user." extended attributes, written atomically with it.
#pragma once

#include <memory>
#include <string>

#include <arrow/io/file.h>

#include "skyhook/storage/object_context.h"

namespace skyhook {

class FileObjectContext : public ObjectContext {
 public:
  explicit FileObjectContext(std::string path) : path_(std::move(path)) {}

  arrow::Result<uint64_t> Size() override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(uint64_t offset, uint64_t length) override;
  arrow::Result<std::optional<std::string>> GetXattr(const std::string& name) override;

 private:
  arrow::Result<std::shared_ptr<arrow::io::MemoryMappedFile>> Mapped();

  std::string path_;
  std::shared_ptr<arrow::io::MemoryMappedFile> file_;
};

}  // namespace skyhook
