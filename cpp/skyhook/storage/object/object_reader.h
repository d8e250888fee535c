// Reads the partition stored in one object (laid out as its design says:
// object_design.h) slice by slice, decoding only the columns asked for.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <arrow/memory_pool.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type.h>

#include "skyhook/storage/object/object_context.h"
#include "skyhook/storage/object/object_design.h"
#include "skyhook/storage/object/object_file.h"
#include "skyhook/storage/object/physical_prefilter.h"
#include "skyhook/storage/object/zone_bounds.h"

namespace skyhook {

class ObjectReader {
 public:
  virtual ~ObjectReader() = default;

  /// Errors: kNotFound when the object is missing, kCorruptObject when it is
  /// not a readable partition of the format it claims.
  /// Everything the reader decodes is allocated from `pool`.
  /// With `only_columns`, an object of several column groups opens just the
  /// groups that hold them (the schema then has only their fields; the
  /// smallest group when none does), so the other extents are never read.
  static arrow::Result<std::unique_ptr<ObjectReader>> Open(
      ObjectContext* object, arrow::MemoryPool* pool,
      const std::vector<std::string>* only_columns = nullptr);
  /// Open with the object's design already read (ReadDesign).
  static arrow::Result<std::unique_ptr<ObjectReader>> Open(
      ObjectContext* object, const ObjectDesign& design, arrow::MemoryPool* pool,
      const std::vector<std::string>* only_columns = nullptr);
  /// The object's size; kNotFound when it cannot be opened.
  static arrow::Result<uint64_t> ObjectSize(ObjectContext* object);

  /// A reader of one extent that holds a file of the given format (a whole
  /// object before designs, or one column group of a design).
  static arrow::Result<std::unique_ptr<ObjectReader>> OpenFormat(ObjectFormat format,
                                                                 std::shared_ptr<ObjectFile> extent,
                                                                 arrow::MemoryPool* pool);

  virtual std::shared_ptr<arrow::Schema> schema() const = 0;
  virtual int64_t num_rows() const = 0;
  /// The row count when it costs no more than what opening read (footers),
  /// else nullopt: an IPC file counts rows only by reading every message.
  virtual std::optional<int64_t> known_num_rows() const { return num_rows(); }

  /// Batches of at most batch_size rows (and never more than one Parquet row
  /// group) holding the given top-level fields, from row start_row on.
  virtual arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ReadFields(
      const std::vector<int>& field_indices, int64_t batch_size, int64_t start_row = 0) = 0;

  /// Of the given fields, those the reader can hand out from now on as the
  /// dictionaries it decodes them as (small-dictionary text: dictionary_columns.h)
  /// instead of gathering them into their stored type; reads then do so for
  /// exactly these. Their indices are left unchecked: the caller checks them
  /// (DictionaryCodes). None by default.
  virtual std::vector<int> KeepDictionaries(const std::vector<int>& /*fields*/) { return {}; }

  /// Zones are the reader's natural units of rows, what statistics are kept
  /// per and what a scan skips: Parquet row groups, IPC record batches, and
  /// kDefaultZoneRows rows for formats without such units.
  static constexpr int64_t kDefaultZoneRows = 64 * 1024;
  /// A batch size for reading zones whole in a few batches: Arrow's readers
  /// reserve for a batch's size up front, so "all at once" must stay finite.
  static constexpr int64_t kZoneBatchRows = 64 * 1024;
  virtual int num_zones() const;
  /// The rows of each zone when opening learned them (footers), else empty.
  virtual std::vector<int64_t> known_zone_rows() const;
  /// What the format's own metadata states of a field's values, per zone
  /// (nullopt where nothing usable); empty when it states nothing.
  virtual std::vector<std::optional<ColumnBounds>> StatedBounds(int /*field*/) const { return {}; }
  /// The rows of the given zones (ascending), in batches of at most
  /// batch_size rows that never span zones; fields as in ReadFields.
  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ReadZones(
      const std::vector<int>& field_indices, int64_t batch_size, std::vector<int> zones);

  /// The byte ranges of the object, [offset, offset + length) ascending, that
  /// ReadZones of these fields and zones reads besides what opening read, so a
  /// client can read just those; nullopt when the format cannot tell (only
  /// Parquet can: its column chunks) or a field or zone does not exist.
  virtual std::optional<std::vector<std::pair<uint64_t, uint64_t>>> ZoneRanges(
      const std::vector<int>& /*field_indices*/, const std::vector<int>& /*zones*/) const {
    return std::nullopt;
  }

  /// Whether SelectZone can evaluate ranges on the format's stored values.
  virtual bool SelectsZones() const { return false; }
  /// The rows of a zone that `ranges` keep, with `fields` of them
  /// (physical_prefilter.h); nullopt when they cannot be evaluated there or
  /// keep more rows than `limits` allow: the zone is then read plainly.
  virtual arrow::Result<std::optional<ZoneSelection>> SelectZone(
      const std::vector<PhysicalRange>& /*ranges*/, const std::vector<int>& /*field_indices*/,
      int /*zone*/, const SelectionLimits& /*limits*/, arrow::compute::ExecContext* /*context*/) {
    return std::nullopt;
  }

  /// Bytes pulled from storage so far.
  virtual int64_t bytes_read() const { return file_ ? file_->bytes_read() : 0; }

 protected:
  explicit ObjectReader(std::shared_ptr<ObjectFile> file) : file_(std::move(file)) {}
  /// ReadZones once the zones are known to exist.
  virtual arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ReadExistingZones(
      const std::vector<int>& field_indices, int64_t batch_size, std::vector<int> zones);
  arrow::Result<std::shared_ptr<arrow::Schema>> FieldsSchema(
      const std::vector<int>& field_indices) const;
  std::shared_ptr<ObjectFile> file_;
};

/// A format's reader failing on the object's bytes: the damage the file met
/// (a checksum mismatch, which Arrow's readers wrap in their own text), a
/// node limit as it is, any other failure kCorruptObject naming the format.
arrow::Status UnreadableFormat(const std::string& format, const arrow::Status& cause,
                               const ObjectFile* file = nullptr);

}  // namespace skyhook
