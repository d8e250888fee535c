// The scan method: filter and project one object inside storage and answer
// with an Arrow IPC stream of the result.
#pragma once

#include <memory>

#include <arrow/buffer.h>
#include <arrow/result.h>

#include "skyhook/protocol/reply.h"
#include "skyhook/storage/object/object_context.h"

namespace skyhook {

/// Never fails: errors are reported inside the Reply.
Reply Scan(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request);

}  // namespace skyhook
