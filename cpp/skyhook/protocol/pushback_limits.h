// Request fields of the methods a loaded node may decline or stop (the reply
// says "executed: none" and the client does the work): the limits the client
// asks for. Absent fields are the node's to choose (storage/runtime/pushback.h).
#pragma once

#include <cstdint>
#include <optional>

#include <arrow/result.h>

#include "skyhook/protocol/frame.h"

namespace skyhook {

struct PushbackLimits {
  /// Decline when more skyhook calls than this are running on the node.
  std::optional<int64_t> max_in_flight;
  /// Stop when the measured CPU per slice exceeds this (0: never).
  std::optional<int64_t> max_slice_cpu_ns;

  static arrow::Result<PushbackLimits> Decode(const HeaderReader& header);
};

}  // namespace skyhook
