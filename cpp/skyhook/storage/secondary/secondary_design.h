// The secondary design of one object: statistics per column and zone, and
// indexes on columns, kept in the object's omap beside the data they describe
// (issue 11, item 5). Each value is tagged with the identity of the data it
// was computed from (data_identity.h), so a reader never uses stale ones.
#pragma once

#include <string>
#include <vector>

#include <arrow/memory_pool.h>
#include <arrow/result.h>
#include <arrow/status.h>

#include "skyhook/storage/object/mutable_object_context.h"

namespace skyhook {

class CallResources;

/// Omap keys. Versioned: a reader ignores what it does not know.
constexpr char kStatisticsKey[] = "skyhook.statistics.v1";
constexpr char kIndexListKey[] = "skyhook.indexes.v1";  // indexed column names, one a line

/// The columns the object's omap lists as indexed (empty when none).
arrow::Result<std::vector<std::string>> IndexedColumns(ObjectContext* object);

/// The omap value of kIndexListKey for these columns.
std::string JoinIndexedColumns(const std::vector<std::string>& columns);

/// Recomputes the statistics (when the object had any) and every index the
/// object's omap lists, after the object's data changed: a storage-side
/// transform calls it at its end, in the same call (atomic in Ceph). All is
/// computed before anything is written, so a failure writes nothing. Bounded
/// by the call's limits (resources).
arrow::Status RebuildSecondaryDesign(MutableObjectContext* object, CallResources* resources);

}  // namespace skyhook
