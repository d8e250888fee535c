// The request of the scan method: which rows (a Substrait filter) and which
// columns (Substrait projections) of one object, and how to encode the result.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <arrow/buffer.h>
#include <arrow/engine/substrait/relation.h>
#include <arrow/result.h>
#include <arrow/util/compression.h>

namespace skyhook {

struct ScanRequest {
  /// One boolean expression; nullopt keeps every row.
  std::optional<arrow::engine::BoundExpressions> filter;
  /// Named output expressions; nullopt returns every column of the object and
  /// an empty list returns zero-column batches (row counts only).
  std::optional<arrow::engine::BoundExpressions> projection;
  arrow::Compression::type compression = arrow::Compression::UNCOMPRESSED;
  int64_t batch_size = 64 * 1024;
  /// The method fails with kResultTooLarge rather than build a larger reply.
  int64_t max_result_bytes = int64_t{1} << 30;

  static arrow::Result<ScanRequest> Decode(const std::shared_ptr<arrow::Buffer>& message);
};

}  // namespace skyhook
