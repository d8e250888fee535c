// Which zones of an object a scan reads, and which rows of them, after the
// object's statistics (zones whose min/max exclude the filter are skipped;
// from `analyze` where the object has them, else from its Parquet footers)
// and indexes (an equality, range or IN on an indexed column reads only the
// zones holding matches, and only the matching rows go on to the filter), and
// on Parquet the rows the filter's simple comparisons exclude on stored
// integers (physical_prefilter.h) are not decoded further.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <arrow/compute/expression.h>
#include <arrow/engine/substrait/relation.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

#include "skyhook/storage/object/object_context.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/object/physical_range.h"
#include "skyhook/storage/runtime/call_resources.h"

namespace skyhook {

struct ZoneToRead {
  int zone = 0;
  int64_t first_row = 0;
  int64_t num_rows = 0;
  std::optional<std::vector<int64_t>> rows;  // the object rows an index found, ascending
};

struct ScanZones {
  std::vector<ZoneToRead> zones;
  int64_t zones_skipped = 0;
  int64_t rows_read_by_index = 0;
  int64_t index_bytes_read = 0;
};

/// The zones to read for `filter`; nullopt when no statistics or index narrow
/// the read (the scan then reads every row). `ranges` are the filter's
/// (PhysicalRanges; `ranges_whole`: they are all of it), which decide zones
/// from their bounds directly. kCorruptObject when a stored value is corrupt.
/// Statistics that do not prove themselves against the object
/// (StatisticsProven) are not used, and counted in *rejected.
arrow::Result<std::optional<ScanZones>> PlanScanZones(ObjectContext* object, ObjectReader* reader,
                                                      const arrow::engine::BoundExpressions& filter,
                                                      const std::vector<PhysicalRange>& ranges,
                                                      bool ranges_whole, CallResources* resources,
                                                      int64_t* rejected);

/// The zones, ascending, that `filter` (bound to `schema`) may match by the
/// bounds the object's format states (ObjectReader::StatedBounds: Parquet
/// footers' statistics), as a scan without `analyze` statistics decides them;
/// every zone where nothing is stated or the filter is too large to test.
/// What a plain read at the client reads of an object; where the bounds
/// prove every row of those zones matches, it need not evaluate the filter.
struct StatedZones {
  std::vector<int> zones;
  bool every_row_matches = false;  // the bounds imply the filter in each of them
};
arrow::Result<StatedZones> ZonesStatedBoundsAllow(ObjectReader* reader,
                                                  const arrow::compute::Expression& filter,
                                                  const arrow::Schema& schema);

/// The planned rows, batch by batch, from row start_row of the object on.
class ZoneBatches {
 public:
  /// Zones read whole are pre-filtered with `ranges` while that keeps few rows.
  ZoneBatches(ScanZones plan, ObjectReader* reader, std::vector<int> fields,
              std::vector<PhysicalRange> ranges, int64_t batch_size, int64_t start_row,
              arrow::compute::ExecContext* context)
      : plan_(std::move(plan)),
        reader_(reader),
        fields_(std::move(fields)),
        ranges_(std::move(ranges)),
        batch_size_(batch_size),
        position_(start_row),
        context_(context) {}

  /// The next batch (nullptr at the end).
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next();
  /// The first object row not yet consumed: where a continued scan starts.
  int64_t position() const { return position_; }
  /// The object rows read so far (those a pre-filter passed over included).
  int64_t rows_scanned() const { return rows_scanned_; }

 private:
  arrow::Status OpenZone(const ZoneToRead& zone);
  // The zone's rows the ranges keep, as taken rows; false when it is read whole.
  arrow::Result<bool> SelectZone(const ZoneToRead& zone);

  ScanZones plan_;
  ObjectReader* reader_;
  std::vector<int> fields_;
  std::vector<PhysicalRange> ranges_;  // emptied once a zone keeps too many rows
  int64_t batch_size_;
  int64_t position_;
  arrow::compute::ExecContext* context_;
  size_t next_zone_ = 0;
  const ZoneToRead* zone_ = nullptr;
  bool selected_ = false;  // the zone's rows are a pre-filter's
  bool tried_selection_ = false;
  int64_t rows_scanned_ = 0;
  std::shared_ptr<arrow::RecordBatchReader> batches_;  // a zone read whole
  std::shared_ptr<arrow::RecordBatch> taken_;          // an index's rows of a zone
  std::vector<int64_t> taken_ends_;                    // the object row after each taken row
  int64_t taken_offset_ = 0;
  int64_t rows_to_skip_ = 0;
};

/// The one way scans and plans read an object's rows under a filter: the
/// zones PlanScanZones leaves (ZoneBatches), else every row from start_row.
/// Batches hold `fields` as stored; the caller still applies the filter.
class FilteredRows {
 public:
  /// `filter` may be null (every row is read).
  static arrow::Result<FilteredRows> Open(ObjectContext* object, ObjectReader* reader,
                                          const arrow::engine::BoundExpressions* filter,
                                          const std::vector<int>& fields, int64_t batch_size,
                                          int64_t start_row, CallResources* resources);

  /// The next batch (nullptr at the end).
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next();
  /// The first object row not yet consumed: where a continued read starts.
  int64_t position() const { return zoned_ ? zoned_->position() : position_; }
  /// The object rows read so far: what a pre-filter passed over counts.
  int64_t rows_scanned() const { return zoned_ ? zoned_->rows_scanned() : rows_scanned_; }

  int64_t zones_skipped() const { return zones_skipped_; }
  int64_t rows_read_by_index() const { return rows_read_by_index_; }
  int64_t index_bytes_read() const { return index_bytes_read_; }
  /// Statistics or indexes of the object not used because they did not prove themselves.
  int64_t secondary_rejected() const { return secondary_rejected_; }

 private:
  std::optional<ZoneBatches> zoned_;
  std::shared_ptr<arrow::RecordBatchReader> batches_;  // without zones: every row
  int64_t position_ = 0;
  int64_t rows_scanned_ = 0;
  int64_t zones_skipped_ = 0;
  int64_t rows_read_by_index_ = 0;
  int64_t index_bytes_read_ = 0;
  int64_t secondary_rejected_ = 0;
};

}  // namespace skyhook
