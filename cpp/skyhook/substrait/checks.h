// What every Substrait check shares: the limits a request must stay inside,
// the error it gets otherwise, and a strict allowlist of the fields a message
// may set. Storage parses requests with protobuf classes generated from the
// same Substrait version the client writes, and checks them here before Arrow
// sees them: Arrow's consumer aborts or crashes on some malformed plans, and a
// crash inside an object class takes the OSD down.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>

#include <arrow/status.h>
#include <google/protobuf/message.h>

#include "skyhook/errors/error.h"

namespace skyhook::substrait_check {

// Arrow's consumer and binder recurse once per level of nesting, and turn an
// IN list into a chain of ORs as deep as it is long (an IN list of 20,000
// values overflows an 8 MiB stack): depth and IN lists stay far below that.
// The client keeps to the same limits (skyhook/expressions.py).
struct Limits {
  static constexpr int kMaxDepth = 256;          // nested expressions, types
  static constexpr int64_t kMaxNodes = 200'000;  // messages in one request
  static constexpr int64_t kMaxLiteralBytes = 1 << 20;
  static constexpr int kMaxListLength = 1 << 16;  // list literals
  static constexpr int kMaxInListLength = 1000;   // IN lists
  // Every IN-list value costs an equality per row, however the lists are
  // nested: a message's lists hold at most this many values together.
  static constexpr int64_t kMaxInValues = 2000;
  static constexpr int kMaxFields = 4096;  // schema and output widths
  static constexpr int kMaxNameBytes = 1024;
};

template <typename... Args>
arrow::Status Reject(Args&&... args) {
  return Error(ErrorCode::kInvalidRequest, "unsupported Substrait: ", std::forward<Args>(args)...);
}

/// Counts the work a request describes, so a small message cannot ask for an
/// unbounded amount of checking or execution.
class Budget {
 public:
  arrow::Status Visit(int depth);
  /// A node Arrow evaluates for every row (an expression, an IN-list value, a measure).
  arrow::Status VisitExpression(int depth);
  arrow::Status AddInValues(int64_t count);

  /// Expression nodes seen: the work per row of what was checked, which sizes slices.
  int64_t expression_nodes() const { return expression_nodes_; }

 private:
  int64_t nodes_ = 0;
  int64_t expression_nodes_ = 0;
  int64_t in_values_ = 0;
};

arrow::Status NoUnknownFields(const google::protobuf::Message& message);

/// An error unless `message` sets only the named fields (or any field of the
/// named oneof, whose cases the caller then checks one by one) and no unknown ones.
arrow::Status OnlyFields(const google::protobuf::Message& message,
                         std::initializer_list<std::string_view> allowed,
                         std::string_view oneof = {});

/// Parses one message of `bytes`, rejecting what protobuf cannot parse.
arrow::Status Parse(std::string_view bytes, const char* what, google::protobuf::Message* message);

}  // namespace skyhook::substrait_check
