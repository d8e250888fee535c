// Error codes carried in reply headers, shared with the Python client
// (python/skyhook/rpc/error_codes.py mirrors them and maps them to exception types).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <arrow/status.h>

namespace skyhook {

enum class ErrorCode : int32_t {
  kOk = 0,
  kInvalidRequest = 1,      // malformed, truncated or inconsistent request
  kUnsupportedVersion = 2,  // request written by a newer protocol
  kUnknownColumn = 3,       // the request names a column the object lacks
  kTypeMismatch = 4,        // a column's type differs between request and object
  kCorruptObject = 5,       // the object is not a readable Parquet/IPC partition
  kResultTooLarge = 6,      // the reply would exceed the request's byte limit
  kNotFound = 7,            // the object does not exist
  kInternal = 8,            // anything else: a bug, reported with its message
  kPushedBack = 9,          // internal to a method: the node declined; never sent
  kLimitExceeded = 10,      // the call needs more time or memory than the node allows
  kConflict = 11,           // the object changed since the client read it (another writer)
};

/// Attaches an ErrorCode to an arrow::Status so methods can say which error the
/// client sees without a second error channel.
class ErrorDetail : public arrow::StatusDetail {
 public:
  explicit ErrorDetail(ErrorCode code) : code_(code) {}
  const char* type_id() const override { return "skyhook::ErrorDetail"; }
  std::string ToString() const override;
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

template <typename... Args>
arrow::Status Error(ErrorCode code, Args&&... args) {
  return arrow::Status::FromDetailAndArgs(
      arrow::StatusCode::Invalid, std::make_shared<ErrorDetail>(code), std::forward<Args>(args)...);
}

/// The code a failed Status carries: its ErrorDetail, or kInternal.
ErrorCode CodeOf(const arrow::Status& status);

/// Prefix a Status message with context, keeping its ErrorCode.
arrow::Status WithContext(const arrow::Status& status, const std::string& context);

}  // namespace skyhook
