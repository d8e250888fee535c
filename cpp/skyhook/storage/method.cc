#include "skyhook/storage/method.h"

#include <exception>
#include <mutex>

#include <arrow/compute/initialize.h>

namespace skyhook {
namespace {

arrow::Status InitializeOnce() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] { status = arrow::compute::Initialize(); });
  return status;
}

// A reply that could not be encoded at all: fall back to an empty-bodied one.
std::shared_ptr<arrow::Buffer> EncodeOrFallback(const Reply& reply) {
  auto encoded = EncodeReply(reply);
  if (encoded.ok()) return *encoded;
  auto fallback = EncodeReply(Reply::FromStatus(encoded.status()));
  return fallback.ok() ? *fallback : std::make_shared<arrow::Buffer>(nullptr, 0);
}

}  // namespace

std::shared_ptr<arrow::Buffer> RunMethod(Method method, ObjectContext* object,
                                         const std::shared_ptr<arrow::Buffer>& request) {
  try {
    auto initialized = InitializeOnce();
    if (!initialized.ok()) return EncodeOrFallback(Reply::FromStatus(initialized));
    return EncodeOrFallback(method(object, request));
  } catch (const std::exception& e) {
    return EncodeOrFallback(
        Reply::FromStatus(arrow::Status::UnknownError("storage method raised: ", e.what())));
  } catch (...) {
    return EncodeOrFallback(
        Reply::FromStatus(arrow::Status::UnknownError("storage method raised")));
  }
}

}  // namespace skyhook
