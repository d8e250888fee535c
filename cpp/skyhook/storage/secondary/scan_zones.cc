#include "skyhook/storage/secondary/scan_zones.h"

#include <algorithm>

#include <arrow/array/array_nested.h>
#include <arrow/array/builder_primitive.h>
#include <arrow/compute/api_vector.h>
#include <arrow/compute/expression.h>
#include <arrow/table.h>

#include "skyhook/storage/secondary/column_index.h"
#include "skyhook/storage/secondary/data_identity.h"
#include "skyhook/storage/secondary/filter_terms.h"
#include "skyhook/storage/secondary/zone_statistics.h"

namespace skyhook {
namespace {

using arrow::compute::Expression;

// An index answers through the zones holding matches; past this share of the
// object's rows, reading the zones whole costs less than taking rows.
constexpr double kMaxIndexShare = 0.25;

// The object's column a bound field names, when it has the same type (a
// column named by another carrier type has statistics of another type).
int ObjectColumn(const arrow::Schema& object_schema, const arrow::Field& bound) {
  int index = object_schema.GetFieldIndex(bound.name());
  if (index < 0 || !object_schema.field(index)->type()->Equals(*bound.type())) return -1;
  return index;
}

// Whether a zone's min, max and null count (statistics row `row`) may let
// rows of the zone satisfy the filter.
arrow::Result<bool> ZoneMayMatch(const arrow::RecordBatch& statistics, int64_t row,
                                 const Expression& filter, const arrow::Schema& bound_schema,
                                 const arrow::Schema& object_schema) {
  std::vector<Expression> known;
  const auto& zone_rows = static_cast<const arrow::Int64Array&>(*statistics.column(2));
  for (int field = 0; field < bound_schema.num_fields(); ++field) {
    if (ObjectColumn(object_schema, *bound_schema.field(field)) < 0) continue;
    const int column = StatisticsColumn(statistics, bound_schema.field(field)->name());
    const auto& stats = static_cast<const arrow::StructArray&>(*statistics.column(column));
    auto ref = arrow::compute::field_ref(arrow::FieldRef(field));
    const auto& nulls = static_cast<const arrow::Int64Array&>(*stats.field(2));
    if (nulls.Value(row) == zone_rows.Value(row)) {
      known.push_back(arrow::compute::is_null(ref));
      continue;
    }
    if (stats.field(0)->IsNull(row) || stats.field(1)->IsNull(row)) continue;
    ARROW_ASSIGN_OR_RAISE(auto min, stats.field(0)->GetScalar(row));
    ARROW_ASSIGN_OR_RAISE(auto max, stats.field(1)->GetScalar(row));
    // A comparison known true implies a value: with nulls in the zone, each
    // bound holds "or is null" (a form SimplifyWithGuarantee understands).
    for (auto bound : {arrow::compute::greater_equal(ref, arrow::compute::literal(min)),
                       arrow::compute::less_equal(ref, arrow::compute::literal(max))}) {
      known.push_back(
          nulls.Value(row) == 0 ? bound : arrow::compute::or_(bound, arrow::compute::is_null(ref)));
    }
  }
  if (known.empty()) return true;
  ARROW_ASSIGN_OR_RAISE(auto guarantee, arrow::compute::and_(known).Bind(bound_schema));
  auto simplified = arrow::compute::SimplifyWithGuarantee(filter, guarantee);
  return !simplified.ok() || simplified->IsSatisfiable();  // unsure: read the zone
}

}  // namespace

arrow::Result<std::optional<ScanZones>> PlanScanZones(ObjectContext* object, ObjectReader* reader,
                                                      const arrow::engine::BoundExpressions& filter,
                                                      CallResources* resources) {
  const auto& object_schema = *reader->schema();
  const auto& bound_schema = *filter.schema;
  const auto& expression = filter.named_expressions[0].expression;
  ARROW_ASSIGN_OR_RAISE(auto identity, DataIdentity(object));
  ARROW_ASSIGN_OR_RAISE(auto statistics, LoadZoneStatistics(object, object_schema, identity));
  std::optional<IndexMatches> matches;
  for (const auto& [field, terms] : ExtractColumnTerms(expression, bound_schema)) {
    if (ObjectColumn(object_schema, *bound_schema.field(field)) < 0) continue;
    ARROW_ASSIGN_OR_RAISE(
        matches, LookUpIndex(object, bound_schema.field(field)->name(), identity, terms.predicate,
                             terms.low, terms.high, resources->exec_context()));
    if (matches) break;
  }
  std::vector<int64_t> zone_rows;
  if (statistics) {
    const auto& rows = static_cast<const arrow::Int64Array&>(*statistics->column(2));
    for (int64_t i = 0; i + 1 < statistics->num_rows(); ++i) zone_rows.push_back(rows.Value(i));
  } else if (matches) {
    zone_rows = matches->zone_rows;
  }
  if ((!statistics && !matches) || static_cast<int>(zone_rows.size()) != reader->num_zones()) {
    return std::nullopt;
  }
  int64_t total_rows = 0;
  for (int64_t rows : zone_rows) total_rows += rows;
  if (matches && matches->rows.size() > kMaxIndexShare * static_cast<double>(total_rows)) {
    matches.reset();
  }
  ScanZones plan;
  size_t next_match = 0;
  int64_t first_row = 0;
  for (int zone = 0; zone < static_cast<int>(zone_rows.size()); ++zone) {
    ZoneToRead read{zone, first_row, zone_rows[zone], std::nullopt};
    first_row += zone_rows[zone];
    bool keep = true;
    if (statistics) {
      ARROW_ASSIGN_OR_RAISE(
          keep, ZoneMayMatch(*statistics, zone, expression, bound_schema, object_schema));
    }
    if (matches) {
      read.rows.emplace();
      while (next_match < matches->rows.size() && matches->rows[next_match] < first_row) {
        read.rows->push_back(matches->rows[next_match++]);
      }
      keep = keep && !read.rows->empty();
      plan.rows_read_by_index += keep ? static_cast<int64_t>(read.rows->size()) : 0;
    }
    if (keep) {
      plan.zones.push_back(std::move(read));
    } else {
      ++plan.zones_skipped;
    }
  }
  if (matches) plan.index_bytes_read = matches->omap_bytes;
  return plan;
}

arrow::Status ZoneBatches::OpenZone(const ZoneToRead& zone) {
  zone_ = &zone;
  taken_.reset();
  batches_.reset();
  taken_offset_ = 0;
  const int64_t skip = std::max<int64_t>(0, position_ - zone.first_row);
  position_ = std::max(position_, zone.first_row);
  if (!zone.rows) {
    ARROW_ASSIGN_OR_RAISE(batches_, reader_->ReadZones(fields_, batch_size_, {zone.zone}));
    // Rows before start_row (a continued scan) are read again but not returned.
    rows_to_skip_ = skip;
    return arrow::Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(auto whole,
                        reader_->ReadZones(fields_, ObjectReader::kZoneBatchRows, {zone.zone}));
  ARROW_ASSIGN_OR_RAISE(auto table, arrow::Table::FromRecordBatchReader(whole.get()));
  ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch(context_->memory_pool()));
  arrow::Int64Builder positions;
  taken_ends_.clear();
  for (int64_t row : *zone.rows) {
    if (row < position_ || row - zone.first_row >= batch->num_rows()) continue;
    ARROW_RETURN_NOT_OK(positions.Append(row - zone.first_row));
    taken_ends_.push_back(row + 1);
  }
  ARROW_ASSIGN_OR_RAISE(auto indices, positions.Finish());
  ARROW_ASSIGN_OR_RAISE(
      auto taken,
      arrow::compute::Take(batch, indices, arrow::compute::TakeOptions::Defaults(), context_));
  taken_ = taken.record_batch();
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ZoneBatches::Next() {
  while (true) {
    if (taken_ && taken_offset_ < taken_->num_rows()) {
      auto batch = taken_->Slice(taken_offset_, batch_size_);
      taken_offset_ += batch->num_rows();
      position_ = taken_offset_ == taken_->num_rows() ? zone_->first_row + zone_->num_rows
                                                      : taken_ends_[taken_offset_ - 1];
      return batch;
    }
    if (batches_) {
      std::shared_ptr<arrow::RecordBatch> batch;
      ARROW_RETURN_NOT_OK(batches_->ReadNext(&batch));
      if (batch != nullptr) {
        if (rows_to_skip_ >= batch->num_rows()) {
          rows_to_skip_ -= batch->num_rows();
          continue;
        }
        batch = batch->Slice(rows_to_skip_);
        rows_to_skip_ = 0;
        position_ += batch->num_rows();
        return batch;
      }
    }
    if (zone_) position_ = std::max(position_, zone_->first_row + zone_->num_rows);
    taken_.reset();
    batches_.reset();
    // Zones wholly before the position were returned by earlier calls.
    while (next_zone_ < plan_.zones.size() &&
           plan_.zones[next_zone_].first_row + plan_.zones[next_zone_].num_rows <= position_) {
      ++next_zone_;
    }
    if (next_zone_ >= plan_.zones.size()) {
      return nullptr;
    }
    ARROW_RETURN_NOT_OK(OpenZone(plan_.zones[next_zone_++]));
  }
}

}  // namespace skyhook
