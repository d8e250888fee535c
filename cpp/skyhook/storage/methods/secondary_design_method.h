// The secondary_design method (reads): what statistics and indexes the
// object's omap holds for its current data, for ds.design() and the client's
// cost model.
#pragma once

#include <memory>

#include <arrow/buffer.h>

#include "skyhook/protocol/reply.h"
#include "skyhook/storage/object/object_context.h"

namespace skyhook {

/// The reply body is one row: {indexes list<string> (the indexed columns
/// whose index describes the current data), stale_indexes list<string>,
/// statistics binary (the statistics batch as an IPC stream, see
/// zone_statistics.h; null when absent or stale), statistics_stale bool}.
Reply DescribeSecondaryDesign(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request);

}  // namespace skyhook
