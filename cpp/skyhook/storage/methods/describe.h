// The describe method: schema, row count and per-column statistics (min, max,
// null count) of one object, the input of partition pruning.
#pragma once

#include <memory>

#include <arrow/buffer.h>

#include "skyhook/protocol/reply.h"
#include "skyhook/storage/object/object_context.h"

namespace skyhook {

/// The reply body is an IPC stream of one row with a struct column per object
/// column: {min, max, null_count, bytes (decoded Arrow size)}. min/max are null where they cannot
/// be used for pruning (unorderable types, floating columns holding NaN).
Reply Describe(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request);

}  // namespace skyhook
