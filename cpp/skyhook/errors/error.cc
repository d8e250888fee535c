#include "skyhook/errors/error.h"

namespace skyhook {

std::string ErrorDetail::ToString() const {
  return "skyhook error " + std::to_string(static_cast<int32_t>(code_));
}

ErrorCode CodeOf(const arrow::Status& status) {
  if (status.ok()) return ErrorCode::kOk;
  auto detail = std::dynamic_pointer_cast<ErrorDetail>(status.detail());
  return detail ? detail->code() : ErrorCode::kInternal;
}

arrow::Status WithContext(const arrow::Status& status, const std::string& context) {
  return arrow::Status(status.code(), context + ": " + status.message(), status.detail());
}

}  // namespace skyhook
