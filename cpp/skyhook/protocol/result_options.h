// Request fields every data-returning method shares: how to encode the result
// and when a storage node may push work back to the client.
#pragma once

#include <cstdint>
#include <optional>

#include <arrow/result.h>
#include <arrow/util/compression.h>

#include "skyhook/protocol/frame.h"

namespace skyhook {

struct ResultOptions {
  arrow::Compression::type compression = arrow::Compression::UNCOMPRESSED;
  int64_t batch_size = 64 * 1024;
  /// The method fails with kResultTooLarge rather than build a larger reply.
  int64_t max_result_bytes = int64_t{1} << 30;
  /// Where in the object to start: the resume_row of the previous call's reply.
  int64_t start_row = 0;

  static arrow::Result<ResultOptions> Decode(const HeaderReader& header);
};

/// When a loaded node declines work (the reply says "executed: none" and the
/// client does it). Absent fields take the node's defaults (NodeLimits).
struct PushbackLimits {
  /// Decline when more skyhook calls than this are running on the node.
  std::optional<int64_t> max_in_flight;
  /// Stop when the measured CPU per slice exceeds this (0: never).
  std::optional<int64_t> max_slice_cpu_ns;

  static arrow::Result<PushbackLimits> Decode(const HeaderReader& header);
};

}  // namespace skyhook
