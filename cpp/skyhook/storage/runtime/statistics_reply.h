// The body of a reply that describes an object in one row (describe,
// secondary_design): an IPC stream within the node's reply limit.
#pragma once

#include <memory>

#include <arrow/buffer.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

#include "skyhook/storage/runtime/node_limits.h"

namespace skyhook {

/// kLimitExceeded when the row is larger than the node's reply limit.
arrow::Result<std::shared_ptr<arrow::Buffer>> StatisticsReplyBody(
    const std::shared_ptr<arrow::RecordBatch>& row, const NodeLimits& limits);

}  // namespace skyhook
