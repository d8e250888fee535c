// The analyze method (writes): computes the object's statistics per column
// and zone (secondary/zone_statistics.h) and keeps them in its omap.
#pragma once

#include <memory>

#include <arrow/buffer.h>

#include "skyhook/protocol/reply.h"
#include "skyhook/storage/object/mutable_object_context.h"

namespace skyhook {

/// No reply body; statistics num_rows, zones, bytes_read, storage_cpu_ns.
Reply Analyze(MutableObjectContext* object, const std::shared_ptr<arrow::Buffer>& request);

}  // namespace skyhook
