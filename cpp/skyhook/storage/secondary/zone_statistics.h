// Statistics of an object per zone (object_reader.h) and for the whole
// object, per column: min, max, null count, a distinct-count estimate, and
// for the whole object an equi-depth histogram and the distinct sketch's
// registers (mergeable across objects). One record batch, kept in the omap
// under kStatisticsKey:
//   zone int32 (-1: the whole object) | first_row int64 | num_rows int64 |
//   one struct per object column, named after it: {min, max (the column's
//   type), null_count, distinct int64, histogram list<type>, sketch binary}
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <arrow/record_batch.h>
#include <arrow/result.h>

#include "skyhook/storage/object/object_context.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/runtime/call_resources.h"

namespace skyhook {

/// Reads the object column by column and computes its statistics batch.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> ComputeZoneStatistics(ObjectReader* reader,
                                                                         CallResources* resources);

/// The object's statistics when they describe its current data (identity)
/// and the columns of object_schema (all of the object's or some of them);
/// nullptr when there are none or they are stale.
/// kCorruptObject when the stored value is not a statistics batch.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> LoadZoneStatistics(
    ObjectContext* object, const arrow::Schema& object_schema, const std::string& identity);

/// Whether a loaded statistics batch proves itself against the object it
/// describes: a row per zone of the reader's, in order, then the whole
/// object's; row counts those the reader knows, adding up to its rows; and,
/// in each of `columns` (statistics columns), null counts within the zone's
/// rows and min <= max. Statistics that do not are not used.
bool StatisticsProven(const arrow::RecordBatch& statistics, const ObjectReader& reader,
                      const std::vector<int>& columns);

/// The statistics batch's column of the object's column `name`; -1 when none.
int StatisticsColumn(const arrow::RecordBatch& statistics, const std::string& name);

}  // namespace skyhook
