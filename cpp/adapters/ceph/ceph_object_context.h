// MutableObjectContext over the object an OSD is running a class method on
// (cls_cxx_*). Reads return the OSD's own buffers, wrapped without copying;
// writes join the operation's transaction, so they apply only with the whole
// call, and only methods registered as writing (CLS_METHOD_WR) may make them.
#pragma once

#include <rados/objclass.h>

#include "skyhook/storage/object/mutable_object_context.h"

namespace skyhook {

class CephObjectContext : public MutableObjectContext {
 public:
  explicit CephObjectContext(cls_method_context_t context) : context_(context) {}

  arrow::Result<uint64_t> Size() override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(uint64_t offset, uint64_t length) override;
  arrow::Result<std::optional<std::string>> GetXattr(const std::string& name) override;

  /// One call's writes are one transaction, and the object cannot change
  /// during the call (its placement group is locked): atomic as it is.
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

 private:
  cls_method_context_t context_;
};

}  // namespace skyhook
