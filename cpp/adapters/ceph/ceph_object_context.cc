#include "ceph_object_context.h"

#include <cerrno>
#include <climits>
#include <cstring>

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

}  // namespace skyhook
