#include "ceph_object_context.h"

#include <cerrno>
#include <climits>
#include <cstring>

#include "skyhook/errors/error.h"

// Pacific's public rados/objclass.h leaves these out; the OSD exports them
// (src/objclass/objclass.h) with these signatures, as it does the others.
int cls_cxx_write_full(cls_method_context_t hctx, ceph::bufferlist* bl);
int cls_cxx_truncate(cls_method_context_t hctx, int ofs);
int cls_cxx_map_remove_key(cls_method_context_t hctx, const std::string& key);

namespace skyhook {
namespace {

// An arrow::Buffer that owns the bufferlist it points into.
class BufferListBuffer : public arrow::Buffer {
 public:
  explicit BufferListBuffer(ceph::bufferlist list)
      : arrow::Buffer(nullptr, 0), list_(std::move(list)) {
    // c_str() makes the list contiguous (a copy only if it had several segments).
    data_ = reinterpret_cast<const uint8_t*>(list_.length() ? list_.c_str() : nullptr);
    size_ = list_.length();
    capacity_ = size_;
  }

 private:
  ceph::bufferlist list_;
};

arrow::Status CephError(const char* what, int code) {
  return arrow::Status::IOError(what, " failed: ", std::strerror(-code));
}

arrow::Status Checked(const char* what, int code) {
  return code < 0 ? CephError(what, code) : arrow::Status::OK();
}

// An object class addresses bytes with an int.
arrow::Result<int> ObjectClassInt(uint64_t value) {
  if (value > INT_MAX) {
    return arrow::Status::IOError(value, " bytes is beyond what an object class can address");
  }
  return static_cast<int>(value);
}

ceph::bufferlist ListOf(const void* data, size_t size) {
  ceph::bufferlist list;
  list.append(static_cast<const char*>(data), size);
  return list;
}

}  // namespace

arrow::Result<uint64_t> CephObjectContext::Size() {
  uint64_t size = 0;
  int code = cls_cxx_stat(context_, &size, nullptr);
  if (code < 0) return CephError("stat", code);
  return size;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> CephObjectContext::Read(uint64_t offset,
                                                                      uint64_t length) {
  if (offset > INT_MAX || length > INT_MAX) {
    return arrow::Status::IOError("read of ", length, " bytes at ", offset,
                                  " is beyond what an object class can read");
  }
  ceph::bufferlist data;
  int code = cls_cxx_read(context_, static_cast<int>(offset), static_cast<int>(length), &data);
  if (code < 0) return CephError("read", code);
  return std::make_shared<BufferListBuffer>(std::move(data));
}

arrow::Result<std::optional<std::string>> CephObjectContext::GetXattr(const std::string& name) {
  ceph::bufferlist value;
  int code = cls_cxx_getxattr(context_, name.c_str(), &value);
  if (code == -ENODATA || code == -ENOENT) return std::nullopt;
  if (code < 0) return CephError("getxattr", code);
  return value.to_str();
}

arrow::Status CephObjectContext::ReplaceObject(const arrow::Buffer& data,
                                               const std::map<std::string, std::string>& attributes,
                                               const AttributeGuard& guard) {
  ARROW_ASSIGN_OR_RAISE(auto value, GetXattr(guard.name));
  if (value != guard.value) {
    return Error(ErrorCode::kConflict, "the object's ", guard.name,
                 " attribute changed meanwhile: nothing was written");
  }
  ARROW_RETURN_NOT_OK(WriteFull(data));
  for (const auto& [name, attribute] : attributes) ARROW_RETURN_NOT_OK(SetXattr(name, attribute));
  return arrow::Status::OK();
}

arrow::Status CephObjectContext::WriteFull(const arrow::Buffer& data) {
  auto list = ListOf(data.data(), static_cast<size_t>(data.size()));
  return Checked("write_full", cls_cxx_write_full(context_, &list));
}

arrow::Status CephObjectContext::Append(const arrow::Buffer& data) {
  uint64_t size = 0;
  int code = cls_cxx_stat(context_, &size, nullptr);
  if (code < 0 && code != -ENOENT) return CephError("stat", code);
  ARROW_ASSIGN_OR_RAISE(int offset, ObjectClassInt(size));
  ARROW_ASSIGN_OR_RAISE(int length, ObjectClassInt(static_cast<uint64_t>(data.size())));
  ARROW_RETURN_NOT_OK(ObjectClassInt(size + static_cast<uint64_t>(data.size())));
  auto list = ListOf(data.data(), static_cast<size_t>(data.size()));
  return Checked("write", cls_cxx_write(context_, offset, length, &list));
}

arrow::Status CephObjectContext::Truncate(uint64_t size) {
  ARROW_ASSIGN_OR_RAISE(int offset, ObjectClassInt(size));
  return Checked("truncate", cls_cxx_truncate(context_, offset));
}

arrow::Status CephObjectContext::SetXattr(const std::string& name, const std::string& value) {
  auto list = ListOf(value.data(), value.size());
  return Checked("setxattr", cls_cxx_setxattr(context_, name.c_str(), &list));
}

arrow::Result<std::optional<std::string>> CephObjectContext::GetOmap(const std::string& key) {
  ceph::bufferlist value;
  int code = cls_cxx_map_get_val(context_, key, &value);
  if (code == -ENOENT) return std::nullopt;  // no such key, or no such object
  if (code < 0) return CephError("omap get", code);
  return value.to_str();
}

arrow::Status CephObjectContext::SetOmap(const std::string& key, const std::string& value) {
  auto list = ListOf(value.data(), value.size());
  return Checked("omap set", cls_cxx_map_set_val(context_, key, &list));
}

arrow::Status CephObjectContext::RemoveOmap(const std::string& key) {
  int code = cls_cxx_map_remove_key(context_, key);
  return code == -ENOENT ? arrow::Status::OK() : Checked("omap remove", code);
}

}  // namespace skyhook
