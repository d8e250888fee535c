// What a storage-side method answers: a status, a message a person can read,
// execution statistics, and a body (an Arrow IPC stream). Failures travel in a
// successful reply too, because a Ceph method's error return loses its output.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/result.h>
#include <arrow/status.h>

#include "skyhook/errors/error.h"

namespace skyhook {

/// How much of its request a method executed; the client completes the rest:
/// all of it, only the filter and projection (a plan's aggregate did not run),
/// or nothing (pushed back).
enum class Executed { kAll, kFilterOnly, kNone };

struct Reply {
  ErrorCode code = ErrorCode::kOk;
  std::string message;
  Executed executed = Executed::kAll;
  std::vector<std::pair<std::string, int64_t>> statistics;
  /// Set when the call stopped at a node limit before the end of the object:
  /// the first row of the object the client continues from in its next call.
  std::optional<int64_t> resume_row;
  std::shared_ptr<arrow::Buffer> body;

  /// A failure, or (kPushedBack) a successful reply that executed nothing.
  static Reply FromStatus(const arrow::Status& status);
};

arrow::Result<std::shared_ptr<arrow::Buffer>> EncodeReply(const Reply& reply);

/// Sets a statistic the reply has to value in reply and in its encoded frame,
/// in place (nothing when the reply lacks it): for what is only known once the
/// reply is encoded, such as the CPU time of the whole call.
arrow::Status SetStatistic(arrow::Buffer* encoded, Reply* reply, std::string_view name,
                           int64_t value);

}  // namespace skyhook
