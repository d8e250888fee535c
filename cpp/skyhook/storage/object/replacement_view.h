// The object a rewrite is about to make, before it is written: its new bytes
// and attributes, with the real object's omap behind them. Secondary design
// (statistics, indexes) is rebuilt from it in the rewriting call, tagged with
// the new data's identity, before the replacement is written: in Ceph a call's
// reads do not see its own pending writes, and in the embedded store a crash
// between the two leaves values that name data the object does not hold yet
// (so they are ignored as stale), never an object described by old values.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "skyhook/storage/object/mutable_object_context.h"

namespace skyhook {

class ReplacementView : public MutableObjectContext {
 public:
  ReplacementView(MutableObjectContext* object, std::shared_ptr<arrow::Buffer> data,
                  std::map<std::string, std::string> attributes)
      : object_(object), data_(std::move(data)), attributes_(std::move(attributes)) {}

  arrow::Result<uint64_t> Size() override { return static_cast<uint64_t>(data_->size()); }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(uint64_t offset, uint64_t length) override;
  arrow::Result<std::optional<std::string>> GetXattr(const std::string& name) override;
  arrow::Result<std::optional<std::string>> GetOmap(const std::string& key) override {
    return object_->GetOmap(key);
  }

  arrow::Status SetOmap(const std::string& key, const std::string& value) override {
    return object_->SetOmap(key, value);
  }
  arrow::Status RemoveOmap(const std::string& key) override { return object_->RemoveOmap(key); }
  arrow::Status UpdateOmap(const std::vector<std::string>& remove,
                           const std::map<std::string, std::string>& set) override {
    return object_->UpdateOmap(remove, set);
  }

  /// The bytes and attributes are the rewrite's to write: refused here.
  arrow::Status ReplaceObject(const arrow::Buffer&, const std::map<std::string, std::string>&,
                              const AttributeGuard&) override;
  arrow::Status WriteFull(const arrow::Buffer&) override;
  arrow::Status Append(const arrow::Buffer&) override;
  arrow::Status Truncate(uint64_t) override;
  arrow::Status SetXattr(const std::string&, const std::string&) override;

 private:
  MutableObjectContext* object_;
  std::shared_ptr<arrow::Buffer> data_;
  std::map<std::string, std::string> attributes_;
};

}  // namespace skyhook
