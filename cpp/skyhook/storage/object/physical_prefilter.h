// A filter's simple conjuncts evaluated on a Parquet row group's physical
// integer values before any row is decoded into Arrow: `field <cmp> literal`
// on flat integer-stored columns (ints, date32, timestamps, decimals stored as
// INT32/INT64). The rows it keeps are a superset of the filter's (conjuncts it
// does not understand are ignored; the caller still applies the filter), and
// only they are gathered, so wide decimals are built and filtered for matches only.
// Dictionary-encoded column chunks are read as indices: a filter's range is
// decided once per dictionary value, and gathered rows take their values from it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <arrow/compute/exec.h>
#include <arrow/memory_pool.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

#include "skyhook/storage/object/physical_range.h"

namespace parquet::arrow {
class FileReader;
}

namespace skyhook {

/// When a selection costs more than it saves: the zone is read plainly.
struct SelectionLimits {
  double max_share = 1.0;   // of the zone's rows kept
  int64_t sample_rows = 0;  // decided on this many first rows of the first field (0: on all)
};

/// The rows of a zone the ranges keep, and the requested fields of just them.
struct ZoneSelection {
  std::shared_ptr<arrow::RecordBatch> batch;  // fields as stored
  std::vector<int64_t> rows;                  // their rows within the zone, ascending
};

/// Reads fields of one row group whole, as the object's reader would.
using RowGroupFields = std::function<arrow::Result<std::shared_ptr<arrow::RecordBatch>>(
    const std::vector<int>& fields)>;

/// The selection of row group `row_group` of `file`, with `fields` (of
/// `fields_schema`'s types) gathered from physical values where they are
/// integer-stored and read through `read_fields` otherwise; nullopt when the
/// ranges cannot be evaluated there or keep more rows than `limits` allow
/// (the caller then reads the row group plainly). kCorruptObject on a corrupt page.
arrow::Result<std::optional<ZoneSelection>> SelectRowGroup(
    parquet::arrow::FileReader* file, int row_group, const std::vector<PhysicalRange>& ranges,
    const std::vector<int>& fields, const arrow::Schema& fields_schema,
    const SelectionLimits& limits, const RowGroupFields& read_fields,
    arrow::compute::ExecContext* context);

}  // namespace skyhook
