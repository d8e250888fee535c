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

#include "skyhook/protocol/pushback_limits.h"
#include "skyhook/protocol/result_options.h"

namespace skyhook {

struct ScanRequest {
  /// One boolean expression; nullopt keeps every row.
  std::optional<arrow::engine::BoundExpressions> filter;
  /// Named output expressions; nullopt returns every column of the object and
  /// an empty list returns zero-column batches (row counts only).
  std::optional<arrow::engine::BoundExpressions> projection;
  /// Substrait nodes of the filter and projection: the work per row.
  int64_t expression_nodes = 0;
  ResultOptions result;
  PushbackLimits pushback;

  static arrow::Result<ScanRequest> Decode(const std::shared_ptr<arrow::Buffer>& message);
};

}  // namespace skyhook
