// ObjectContext over the object an OSD is running a class method on
// (cls_cxx_*). Reads return the OSD's own buffers, wrapped without copying.
#pragma once

#include <rados/objclass.h>

#include "skyhook/storage/object_context.h"

namespace skyhook {

class CephObjectContext : public ObjectContext {
 public:
  explicit CephObjectContext(cls_method_context_t context) : context_(context) {}

  arrow::Result<uint64_t> Size() override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(uint64_t offset, uint64_t length) override;
  arrow::Result<std::optional<std::string>> GetXattr(const std::string& name) override;

 private:
  cls_method_context_t context_;
};

}  // namespace skyhook
