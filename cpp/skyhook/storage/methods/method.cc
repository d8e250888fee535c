#include "skyhook/storage/methods/method.h"

#include <exception>
#include <mutex>

#include <arrow/compute/initialize.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/runtime/cpu_timer.h"

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

// Storage CPU counts the whole call: the method's work, its reply's framing
// (the body's copy) included, so the execution's own count is replaced once the
// reply is encoded.
std::shared_ptr<arrow::Buffer> EncodeWithCpuTime(Reply reply, const CpuTimer& timer) {
  auto encoded = EncodeReply(reply);
  if (!encoded.ok()) return EncodeOrFallback(Reply::FromStatus(encoded.status()));
  // A header that cannot be rewritten keeps the execution's count.
  (void)SetStatistic(encoded->get(), &reply, "storage_cpu_ns", timer.ElapsedNanos());
  return *encoded;
}

template <typename Call>
std::shared_ptr<arrow::Buffer> Guarded(Call call, ErrorCode* status = nullptr) {
  CpuTimer timer;
  auto encoded = [&](Reply reply) {
    if (status != nullptr) *status = reply.code;
    return EncodeWithCpuTime(std::move(reply), timer);
  };
  try {
    auto initialized = InitializeOnce();
    if (!initialized.ok()) return encoded(Reply::FromStatus(initialized));
    return encoded(call());
  } catch (const std::exception& e) {
    return encoded(
        Reply::FromStatus(arrow::Status::UnknownError("storage method raised: ", e.what())));
  } catch (...) {
    return encoded(Reply::FromStatus(arrow::Status::UnknownError("storage method raised")));
  }
}

}  // namespace

const MethodInfo* FindMethod(std::string_view name) {
  for (const auto& info : kMethods) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

std::shared_ptr<arrow::Buffer> RunMethod(const MethodInfo& method, MutableObjectContext* object,
                                         const std::shared_ptr<arrow::Buffer>& request,
                                         ErrorCode* status) {
  return Guarded(
      [&] { return std::visit([&](auto run) { return run(object, request); }, method.method); },
      status);
}

std::shared_ptr<arrow::Buffer> RunMethod(const MethodInfo& method, ObjectContext* object,
                                         const std::shared_ptr<arrow::Buffer>& request) {
  return Guarded([&] {
    if (method.writes()) {
      return Reply::FromStatus(Error(ErrorCode::kInternal, "method ", method.name,
                                     " writes, and this object cannot be written"));
    }
    return std::get<ReadMethod>(method.method)(object, request);
  });
}

}  // namespace skyhook
