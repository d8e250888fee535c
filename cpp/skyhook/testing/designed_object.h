// An object in memory with a design attribute, for tests of readers: it
// records every range read.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <arrow/buffer.h>

#include "skyhook/storage/object/object_context.h"
#include "skyhook/storage/object/object_design.h"

namespace skyhook {

class DesignedObject : public ObjectContext {
 public:
  DesignedObject(std::shared_ptr<arrow::Buffer> data, const ObjectDesign& design)
      : data_(std::move(data)), design_(SerializeDesign(design).ValueOrDie()->ToString()) {}

  arrow::Result<uint64_t> Size() override { return static_cast<uint64_t>(data_->size()); }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(uint64_t offset, uint64_t length) override {
    if (offset > static_cast<uint64_t>(data_->size())) return arrow::Status::IOError("past end");
    length = std::min<uint64_t>(length, data_->size() - offset);
    reads.emplace_back(offset, length);
    return arrow::SliceBuffer(data_, static_cast<int64_t>(offset), static_cast<int64_t>(length));
  }
  arrow::Result<std::optional<std::string>> GetXattr(const std::string& name) override {
    if (name == kDesignAttribute) return design_;
    return std::nullopt;
  }
  arrow::Result<std::optional<std::string>> GetOmap(const std::string&) override {
    return std::nullopt;
  }

  std::vector<std::pair<uint64_t, uint64_t>> reads;

 private:
  std::shared_ptr<arrow::Buffer> data_;
  std::string design_;
};

}  // namespace skyhook
