// MutableObjectContext over an object's bytes and attributes held in memory:
// the client-side transform runs the storage-side transform method on an
// object it read, so both build identical objects, then writes the result
// back itself (python/skyhook/design/object_transform.py).
#pragma once

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <arrow/buffer.h>

#include "skyhook/storage/object/mutable_object_context.h"

namespace skyhook {

class MemoryObject : public MutableObjectContext {
 public:
  MemoryObject(std::shared_ptr<arrow::Buffer> bytes, std::map<std::string, std::string> attributes)
      : bytes_(std::move(bytes)), attributes_(std::move(attributes)) {}

  const std::shared_ptr<arrow::Buffer>& bytes() const { return bytes_; }
  const std::map<std::string, std::string>& attributes() const { return attributes_; }

  arrow::Result<uint64_t> Size() override { return static_cast<uint64_t>(bytes_->size()); }

  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(uint64_t offset, uint64_t length) override {
    const auto size = static_cast<uint64_t>(bytes_->size());
    if (offset > size) return arrow::Status::IOError("read at ", offset, " beyond the object");
    return arrow::SliceBuffer(bytes_, static_cast<int64_t>(offset),
                              static_cast<int64_t>(std::min(length, size - offset)));
  }

  arrow::Result<std::optional<std::string>> GetXattr(const std::string& name) override {
    auto found = attributes_.find(name);
    if (found == attributes_.end()) return std::nullopt;
    return found->second;
  }

  arrow::Status ReplaceObject(const arrow::Buffer& data,
                              const std::map<std::string, std::string>& attributes,
                              const AttributeGuard& guard) override {
    ARROW_ASSIGN_OR_RAISE(auto value, GetXattr(guard.name));
    if (value != guard.value) return arrow::Status::Invalid("the guard does not hold");
    ARROW_RETURN_NOT_OK(WriteFull(data));
    for (const auto& [name, attribute] : attributes) attributes_[name] = attribute;
    return arrow::Status::OK();
  }

  arrow::Status WriteFull(const arrow::Buffer& data) override {
    ARROW_ASSIGN_OR_RAISE(bytes_, arrow::AllocateBuffer(data.size()));
    if (data.size() > 0) std::memcpy(bytes_->mutable_data(), data.data(), data.size());
    return arrow::Status::OK();
  }

  // What a client-side transform never needs: only the transform method runs here.
  arrow::Status Append(const arrow::Buffer&) override { return Unsupported(); }
  arrow::Status Truncate(uint64_t) override { return Unsupported(); }
  arrow::Status SetXattr(const std::string& name, const std::string& value) override {
    attributes_[name] = value;
    return arrow::Status::OK();
  }
  // The omap stays in storage: what a method writes here is dropped with the object.
  arrow::Result<std::optional<std::string>> GetOmap(const std::string& key) override {
    auto found = omap_.find(key);
    if (found == omap_.end()) return std::nullopt;
    return found->second;
  }
  arrow::Status SetOmap(const std::string& key, const std::string& value) override {
    omap_[key] = value;
    return arrow::Status::OK();
  }
  arrow::Status RemoveOmap(const std::string& key) override {
    omap_.erase(key);
    return arrow::Status::OK();
  }

 private:
  static arrow::Status Unsupported() {
    return arrow::Status::NotImplemented("an object in memory is only transformed");
  }

  std::shared_ptr<arrow::Buffer> bytes_;
  std::map<std::string, std::string> attributes_;
  std::map<std::string, std::string> omap_;
};

}  // namespace skyhook
