// Request fields every data-returning method shares: how to encode the result.
#pragma once

#include <cstdint>

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
  /// Push back (executed none) rather than reply with more bytes than the object
  /// holds: the client reads the object plainly instead, never moving more.
  bool within_object = false;
  /// Bytes of this object's earlier replies (continuations): they count towards it.
  int64_t bytes_before = 0;
  /// Send sorted integer columns as their differences (named in each batch's
  /// "skyhook.delta" metadata): off for clients that predate it.
  bool delta_sorted_integers = false;

  static arrow::Result<ResultOptions> Decode(const HeaderReader& header);
};

}  // namespace skyhook
