// ObjectContext over bytes in memory: an object and its attributes (a design,
// or the format attribute of objects before designs) without a file or an
// OSD, for harnesses that feed the storage methods.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include <arrow/buffer.h>

#include "skyhook/storage/object/object_context.h"
#include "skyhook/storage/object/object_reader.h"

namespace skyhook {

class MemoryObjectContext : public ObjectContext {
 public:
  MemoryObjectContext(std::shared_ptr<arrow::Buffer> bytes, std::optional<std::string> format,
                      std::optional<std::string> design = std::nullopt)
      : bytes_(std::move(bytes)), format_(std::move(format)), design_(std::move(design)) {}

  arrow::Result<uint64_t> Size() override { return static_cast<uint64_t>(bytes_->size()); }

  // A view, as the file (mmap) and Ceph adapters return: no copy, so a read
  // past the buffer is a read past the object, which ASan reports.
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(uint64_t offset, uint64_t length) override {
    const auto size = static_cast<uint64_t>(bytes_->size());
    if (offset > size) return arrow::Status::IOError("read at ", offset, " beyond the object");
    const uint64_t available = std::min(length, size - offset);
    return arrow::SliceBuffer(bytes_, static_cast<int64_t>(offset),
                              static_cast<int64_t>(available));
  }

  arrow::Result<std::optional<std::string>> GetXattr(const std::string& name) override {
    if (name == kFormatAttribute) return format_;
    if (name == kDesignAttribute) return design_;
    return std::nullopt;
  }

  // No omap: corrupt statistics and index values are the unit tests' (secondary_design_test.cc).
  arrow::Result<std::optional<std::string>> GetOmap(const std::string&) override {
    return std::nullopt;
  }

 private:
  std::shared_ptr<arrow::Buffer> bytes_;
  std::optional<std::string> format_;
  std::optional<std::string> design_;
};

}  // namespace skyhook
