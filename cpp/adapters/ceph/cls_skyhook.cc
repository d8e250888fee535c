// The skyhook object class: every storage-side method, registered with the
// OSD under its own name and run on the OSD's op thread. Methods that only
// read always return 0 with an encoded reply: an error return would drop the
// reply and its message. The OSD sends no output of a method that writes
// (beyond 64 bytes), so a writer's failure is its return code (WriterErrno):
// the transaction is dropped, and the client asks a checking method why.
#include <cerrno>
#include <cstring>
#include <exception>
#include <utility>

#include <rados/objclass.h>

#include "ceph_object_context.h"
#include "skyhook/storage/methods/method.h"

CLS_VER(1, 0)
CLS_NAME(skyhook)

namespace {

// The client maps these back (python/skyhook/backends/rados.py, WRITER_ERRORS).
int WriterErrno(skyhook::ErrorCode code) {
  switch (code) {
    case skyhook::ErrorCode::kInvalidRequest:
      return -EINVAL;
    case skyhook::ErrorCode::kUnsupportedVersion:
      return -EOPNOTSUPP;
    case skyhook::ErrorCode::kUnknownColumn:
      return -ENOKEY;
    case skyhook::ErrorCode::kTypeMismatch:
      return -EDOM;
    case skyhook::ErrorCode::kCorruptObject:
      return -EUCLEAN;
    case skyhook::ErrorCode::kNotFound:
      return -ENOENT;
    case skyhook::ErrorCode::kConflict:
      return -ECANCELED;
    case skyhook::ErrorCode::kLimitExceeded:
    case skyhook::ErrorCode::kResultTooLarge:
      return -EFBIG;
    default:
      return -EIO;
  }
}

template <size_t Index>
int CallMethod(cls_method_context_t context, ceph::bufferlist* in, ceph::bufferlist* out) {
  try {
    auto request = std::make_shared<arrow::Buffer>(
        reinterpret_cast<const uint8_t*>(in->length() ? in->c_str() : ""), in->length());
    skyhook::CephObjectContext object(context);
    auto status = skyhook::ErrorCode::kOk;
    auto reply = skyhook::RunMethod(skyhook::kMethods[Index], &object, request, &status);
    out->append(reinterpret_cast<const char*>(reply->data()), reply->size());
    if (skyhook::kMethods[Index].writes() && status != skyhook::ErrorCode::kOk) {
      return WriterErrno(status);
    }
    return 0;
  } catch (const std::exception& e) {
    CLS_ERR("skyhook method %s failed: %s", skyhook::kMethods[Index].name.data(), e.what());
    return -EIO;
  } catch (...) {
    CLS_ERR("skyhook method %s failed", skyhook::kMethods[Index].name.data());
    return -EIO;
  }
}

template <size_t... Index>
void RegisterMethods(cls_handle_t handle, std::index_sequence<Index...>) {
  static cls_method_handle_t method_handles[sizeof...(Index)];
  ((cls_register_cxx_method(
       handle, skyhook::kMethods[Index].name.data(),
       skyhook::kMethods[Index].writes() ? CLS_METHOD_RD | CLS_METHOD_WR : CLS_METHOD_RD,
       &CallMethod<Index>, &method_handles[Index])),
   ...);
}

}  // namespace

CLS_INIT(skyhook) {
  cls_handle_t handle;
  cls_register("skyhook", &handle);
  RegisterMethods(handle, std::make_index_sequence<skyhook::kMethods.size()>{});
}
