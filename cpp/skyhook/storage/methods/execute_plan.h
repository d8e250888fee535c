// The execute_plan method: run a Substrait sub-plan (read -> filter -> project
// -> partial aggregate) on one object with Acero, slice by slice, and answer
// with its output as an Arrow IPC stream.
#pragma once

#include <memory>

#include <arrow/buffer.h>

#include "skyhook/protocol/reply.h"
#include "skyhook/storage/object/object_context.h"

namespace skyhook {

/// The plan's one named table is this object; its base schema names the
/// columns to decode. Never fails: errors are reported inside the Reply.
Reply ExecutePlan(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request);

}  // namespace skyhook
