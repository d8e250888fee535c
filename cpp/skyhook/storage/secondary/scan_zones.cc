#include "skyhook/storage/secondary/scan_zones.h"

#include <algorithm>

#include <arrow/array/array_nested.h>
#include <arrow/array/builder_primitive.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/compute/api_vector.h>
#include <arrow/compute/expression.h>
#include <arrow/table.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/zone_bounds.h"
#include "skyhook/storage/secondary/column_index.h"
#include "skyhook/storage/secondary/data_identity.h"
#include "skyhook/storage/secondary/filter_terms.h"
#include "skyhook/storage/secondary/zone_statistics.h"
#include "skyhook/storage/statistics/nan_safe_simplify.h"

namespace skyhook {
namespace {

using arrow::compute::Expression;

// Arrow's SimplifyWithGuarantee costs grow faster than the filter (an OR of
// 1,000 equalities: seconds per zone, each continued call again); past this
// many nodes (an IN list's values count), zones are not tested against
// statistics, as the filter's evaluation costs milliseconds per zone.
constexpr int64_t kMaxSimplifiedNodes = 64;

// An index answers through the zones holding matches; past this share of the
// object's rows, reading the zones whole costs less than taking rows.
constexpr double kMaxIndexShare = 0.25;

// A pre-filter keeping more than this share of a zone's rows costs more than
// it saves (Q1's date bound keeps 98 %): that zone and the rest are read
// whole. The first zone tried decides on its first rows (a page or so).
constexpr double kMaxSelectedShare = 0.5;
constexpr int64_t kSampleRows = 8192;

// The object's column a bound field names, when it has the same type (a
// column named by another carrier type has statistics of another type).
int ObjectColumn(const arrow::Schema& object_schema, const arrow::Field& bound) {
  int index = object_schema.GetFieldIndex(bound.name());
  if (index < 0 || !object_schema.field(index)->type()->Equals(*bound.type())) return -1;
  return index;
}

bool IsComparison(const std::string& function) {
  return function == "equal" || function == "less" || function == "less_equal" ||
         function == "greater" || function == "greater_equal";
}

bool IsConnective(const std::string& function) {
  return function == "and" || function == "and_kleene" || function == "or" ||
         function == "or_kleene";
}

bool References(const Expression& expression, const arrow::Schema& schema, int field) {
  for (const auto& ref : arrow::compute::FieldsInExpression(expression)) {
    auto path = ref.FindOne(schema);
    if (path.ok() && (*path)[0] == field) return true;
  }
  return false;
}

// Whether the filter uses the field only in comparisons joined by and/or: a
// NaN then fails every comparison it is in, so (the filter being monotone in
// them) rows of NaN match no filter their zone's bounds exclude. Anything
// else (not, !=, is_nan, arithmetic) could hold for a NaN outside the bounds.
bool NanNeverMatches(const Expression& expression, const arrow::Schema& schema, int field) {
  const auto* call = expression.call();
  if (call == nullptr) return !References(expression, schema, field);
  if (IsConnective(call->function_name)) {
    for (const auto& argument : call->arguments) {
      if (!NanNeverMatches(argument, schema, field)) return false;
    }
    return true;
  }
  if (IsComparison(call->function_name)) {
    for (const auto& argument : call->arguments) {
      if (argument.field_ref() == nullptr && References(argument, schema, field)) return false;
    }
    return true;
  }
  return !References(expression, schema, field);
}

// Whether the filter is small enough to simplify once per zone: its nodes,
// counted up to the limit.
bool CheapToSimplify(const Expression& expression, int64_t* nodes) {
  if (++*nodes > kMaxSimplifiedNodes) return false;
  const auto* call = expression.call();
  if (call == nullptr) return true;
  if (call->function_name == "is_in" || call->function_name == "index_in") {
    const auto* options =
        dynamic_cast<const arrow::compute::SetLookupOptions*>(call->options.get());
    if (options == nullptr) return false;
    *nodes += options->value_set.length();
  }
  for (const auto& argument : call->arguments) {
    if (!CheapToSimplify(argument, nodes)) return false;
  }
  return *nodes <= kMaxSimplifiedNodes;
}

enum class ZoneVerdict { kNoRow, kSomeRows, kEveryRow };

bool IsTrue(const Expression& expression) {
  const auto* value = expression.literal();
  if (value == nullptr || !value->is_scalar()) return false;
  const auto* scalar = dynamic_cast<const arrow::BooleanScalar*>(value->scalar().get());
  return scalar != nullptr && scalar->is_valid && scalar->value;
}

// Which rows of a zone (num_rows rows; bounds per bound field) the filter may
// match: none, some, or (the bounds imply it) every one.
arrow::Result<ZoneVerdict> TestZone(const std::vector<std::optional<ColumnBounds>>& columns,
                                    int64_t num_rows, const Expression& filter,
                                    const arrow::Schema& bound_schema) {
  std::vector<Expression> known;
  // Bounds prove every row matches only where they hold for every row: a
  // null or NaN (which the bounds leave out) fails the comparisons they imply.
  bool every_row_bounded = true;
  for (int field = 0; field < bound_schema.num_fields(); ++field) {
    const auto& bounds = columns[static_cast<size_t>(field)];
    if (!bounds) continue;
    auto ref = arrow::compute::field_ref(arrow::FieldRef(field));
    if (bounds->null_count == num_rows) {
      known.push_back(arrow::compute::is_null(ref));
      every_row_bounded = false;
      continue;
    }
    if (bounds->min == nullptr || bounds->max == nullptr) continue;
    every_row_bounded = every_row_bounded && bounds->null_count == 0 && !bounds->may_hold_nan;
    if (bounds->may_hold_nan && !NanNeverMatches(filter, bound_schema, field)) continue;
    // A comparison known true implies a value: with nulls in the zone, each
    // bound holds "or is null" (a form SimplifyWithGuarantee understands).
    for (auto bound : {arrow::compute::greater_equal(ref, arrow::compute::literal(bounds->min)),
                       arrow::compute::less_equal(ref, arrow::compute::literal(bounds->max))}) {
      known.push_back(bounds->null_count == 0
                          ? bound
                          : arrow::compute::or_(bound, arrow::compute::is_null(ref)));
    }
  }
  if (known.empty()) return ZoneVerdict::kSomeRows;
  ARROW_ASSIGN_OR_RAISE(auto guarantee, arrow::compute::and_(known).Bind(bound_schema));
  auto simplified = NanSafeSimplify(filter, guarantee);
  if (!simplified.ok()) return ZoneVerdict::kSomeRows;  // unsure: read and filter the zone
  if (!simplified->IsSatisfiable()) return ZoneVerdict::kNoRow;
  return every_row_bounded && IsTrue(*simplified) ? ZoneVerdict::kEveryRow : ZoneVerdict::kSomeRows;
}

arrow::Result<bool> ZoneMayMatch(const std::vector<std::optional<ColumnBounds>>& columns,
                                 int64_t num_rows, const Expression& filter,
                                 const arrow::Schema& bound_schema) {
  ARROW_ASSIGN_OR_RAISE(auto verdict, TestZone(columns, num_rows, filter, bound_schema));
  return verdict != ZoneVerdict::kNoRow;
}

// The expression with its field references by position, as ZoneMayMatch's
// guarantees name fields: Arrow's simplifier matches references exactly, and a
// client's filter names them (Substrait's refer by position already).
Expression Positional(const Expression& expression, const arrow::Schema& schema) {
  if (const auto* ref = expression.field_ref()) {
    auto path = ref->FindOne(schema);
    return path.ok() ? arrow::compute::field_ref(arrow::FieldRef(*path)) : expression;
  }
  const auto* call = expression.call();
  if (call == nullptr) return expression;
  std::vector<Expression> arguments;
  for (const auto& argument : call->arguments) arguments.push_back(Positional(argument, schema));
  return arrow::compute::call(call->function_name, std::move(arguments), call->options);
}

// A filter's column ranges (PhysicalRanges) by the bound field they test.
struct FieldRanges {
  std::vector<std::pair<int, const PhysicalRange*>> ranges;
  bool whole = false;  // the filter is just them: they decide every zone
};

FieldRanges RangesByBoundField(const std::vector<PhysicalRange>& ranges, bool whole,
                               const arrow::Schema& object_schema,
                               const arrow::Schema& bound_schema) {
  FieldRanges found;
  found.whole = whole;
  for (const auto& range : ranges) {
    // PhysicalRanges found the object's field by the bound field's name.
    const int field = bound_schema.GetFieldIndex(object_schema.field(range.field)->name());
    if (field < 0) {
      found.whole = false;  // bound twice under one name: Arrow's simplifier decides
      continue;
    }
    found.ranges.emplace_back(field, &range);
  }
  return found;
}

enum class RangesVerdict { kExcluded, kMayMatch, kUndecided };

// Whether the ranges leave no row of a zone (bounds per bound field): a
// range's field all null (a comparison with null never holds), or its stated
// [min, max] disjoint from the range. Decided in the integer domain, without
// Arrow's general simplifier. Bounds of another type or beyond int64 (the
// ranges' domain) leave the zone undecided: the simplifier tries it.
RangesVerdict TestRanges(const FieldRanges& ranges,
                         const std::vector<std::optional<ColumnBounds>>& columns, int64_t num_rows,
                         const arrow::Schema& bound_schema) {
  auto verdict = RangesVerdict::kMayMatch;
  for (const auto& [field, range] : ranges.ranges) {
    const auto& bounds = columns[static_cast<size_t>(field)];
    if (!bounds) continue;
    if (bounds->null_count == num_rows) return RangesVerdict::kExcluded;
    if (bounds->min == nullptr || bounds->max == nullptr) continue;
    const auto& type = *bound_schema.field(field)->type();
    const auto min = IntegerDomainValue(*bounds->min);
    const auto max = IntegerDomainValue(*bounds->max);
    if (!bounds->min->type->Equals(type) || !bounds->max->type->Equals(type) || !min || !max ||
        *min < INT64_MIN || *max > INT64_MAX) {
      verdict = RangesVerdict::kUndecided;
      continue;
    }
    const __int128 low = std::max<__int128>(*min, range->low);
    const __int128 high = std::min<__int128>(*max, range->high);
    if (low > high) return RangesVerdict::kExcluded;
    if (low == high && std::find(range->excluded.begin(), range->excluded.end(),
                                 static_cast<int64_t>(low)) != range->excluded.end()) {
      return RangesVerdict::kExcluded;
    }
  }
  return verdict;
}

// A zone's bounds from `analyze`'s statistics (row `row` of the batch, its
// column `column`, found by name: a reader may hold only some of the object's columns).
arrow::Result<std::optional<ColumnBounds>> AnalyzedBounds(const arrow::RecordBatch& statistics,
                                                          int64_t row, int column) {
  const auto& stats = static_cast<const arrow::StructArray&>(*statistics.column(column));
  ColumnBounds bounds;
  bounds.null_count = static_cast<const arrow::Int64Array&>(*stats.field(2)).Value(row);
  if (!stats.field(0)->IsNull(row) && !stats.field(1)->IsNull(row)) {
    ARROW_ASSIGN_OR_RAISE(bounds.min, stats.field(0)->GetScalar(row));
    ARROW_ASSIGN_OR_RAISE(bounds.max, stats.field(1)->GetScalar(row));
  }
  return bounds;
}

// Bounds per zone and bound field: analyze's statistics where the object has
// them, else what its footers state.
arrow::Result<std::vector<std::vector<std::optional<ColumnBounds>>>> ZoneColumnBounds(
    ObjectReader* reader, const arrow::RecordBatch* statistics, size_t num_zones,
    const arrow::Schema& bound_schema, const Expression& filter) {
  const auto& object_schema = *reader->schema();
  std::vector<std::vector<std::optional<ColumnBounds>>> zones(
      num_zones,
      std::vector<std::optional<ColumnBounds>>(static_cast<size_t>(bound_schema.num_fields())));
  for (int field = 0; field < bound_schema.num_fields(); ++field) {
    const int column = ObjectColumn(object_schema, *bound_schema.field(field));
    if (column < 0 || !References(filter, bound_schema, field)) continue;
    if (statistics) {
      const int statistics_column =
          StatisticsColumn(*statistics, bound_schema.field(field)->name());
      if (statistics_column < 0) continue;
      for (size_t zone = 0; zone < num_zones; ++zone) {
        ARROW_ASSIGN_OR_RAISE(
            zones[zone][static_cast<size_t>(field)],
            AnalyzedBounds(*statistics, static_cast<int64_t>(zone), statistics_column));
      }
      continue;
    }
    auto stated = reader->StatedBounds(column);
    if (stated.size() != num_zones) continue;
    for (size_t zone = 0; zone < num_zones; ++zone) {
      zones[zone][static_cast<size_t>(field)] = std::move(stated[zone]);
    }
  }
  return zones;
}

// Every zone of the object, for a pre-filter to narrow; nullopt when opening
// did not learn the zones.
std::optional<ScanZones> EveryZone(const ObjectReader& reader) {
  const auto zone_rows = reader.known_zone_rows();
  if (zone_rows.empty() || static_cast<int>(zone_rows.size()) != reader.num_zones()) {
    return std::nullopt;
  }
  ScanZones plan;
  int64_t first_row = 0;
  for (int zone = 0; zone < static_cast<int>(zone_rows.size()); ++zone) {
    plan.zones.push_back({zone, first_row, zone_rows[zone], std::nullopt});
    first_row += zone_rows[zone];
  }
  return plan;
}

// The statistics columns of the filter's fields: those whose bounds it may use.
std::vector<int> FilterStatisticsColumns(const arrow::RecordBatch& statistics,
                                         const arrow::Schema& bound_schema) {
  std::vector<int> columns;
  for (const auto& field : bound_schema.fields()) {
    const int column = StatisticsColumn(statistics, field->name());
    if (column >= 0) columns.push_back(column);
  }
  return columns;
}

}  // namespace

arrow::Result<std::optional<ScanZones>> PlanScanZones(ObjectContext* object, ObjectReader* reader,
                                                      const arrow::engine::BoundExpressions& filter,
                                                      const std::vector<PhysicalRange>& ranges,
                                                      bool ranges_whole, CallResources* resources,
                                                      int64_t* rejected) {
  const auto& object_schema = *reader->schema();
  const auto& bound_schema = *filter.schema;
  const auto& expression = filter.named_expressions[0].expression;
  ARROW_ASSIGN_OR_RAISE(auto identity, DataIdentity(object));
  auto loaded = LoadZoneStatistics(object, object_schema, identity);
  if (!loaded.ok() && CodeOf(loaded.status()) != ErrorCode::kCorruptObject) return loaded.status();
  auto statistics = loaded.ok() ? *loaded : nullptr;
  if (!loaded.ok()) ++*rejected;  // damaged statistics are not used: the zones are read
  if (statistics &&
      !StatisticsProven(*statistics, *reader, FilterStatisticsColumns(*statistics, bound_schema))) {
    statistics = nullptr;  // read as without them: the footers' bounds are checked as they are used
    ++*rejected;
  }
  std::optional<IndexMatches> matches;
  for (const auto& [field, terms] : ExtractColumnTerms(expression, bound_schema)) {
    if (ObjectColumn(object_schema, *bound_schema.field(field)) < 0) continue;
    auto found = LookUpIndex(object, bound_schema.field(field)->name(), identity, terms.predicate,
                             terms.low, terms.high, resources->exec_context());
    if (!found.ok() && CodeOf(found.status()) == ErrorCode::kCorruptObject) {
      ++*rejected;  // an index that does not prove itself is not used: the zones are read
      continue;
    }
    ARROW_ASSIGN_OR_RAISE(matches, std::move(found));
    if (matches) break;
  }
  std::vector<int64_t> zone_rows;
  if (statistics) {
    const auto& rows = static_cast<const arrow::Int64Array&>(*statistics->column(2));
    for (int64_t i = 0; i + 1 < statistics->num_rows(); ++i) zone_rows.push_back(rows.Value(i));
  } else if (matches) {
    zone_rows = matches->zone_rows;
  } else {
    zone_rows = reader->known_zone_rows();  // footers' statistics may still apply
  }
  if (zone_rows.empty() || static_cast<int>(zone_rows.size()) != reader->num_zones()) {
    return std::nullopt;
  }
  ARROW_ASSIGN_OR_RAISE(auto bounds, ZoneColumnBounds(reader, statistics.get(), zone_rows.size(),
                                                      bound_schema, expression));
  int64_t total_rows = 0;
  for (int64_t rows : zone_rows) total_rows += rows;
  if (matches && matches->rows.size() > kMaxIndexShare * static_cast<double>(total_rows)) {
    matches.reset();
  }
  const auto field_ranges = RangesByBoundField(ranges, ranges_whole, object_schema, bound_schema);
  int64_t nodes = 0;
  const bool simplify = CheapToSimplify(expression, &nodes);
  ScanZones plan;
  size_t next_match = 0;
  int64_t first_row = 0;
  for (int zone = 0; zone < static_cast<int>(zone_rows.size()); ++zone) {
    ZoneToRead read{zone, first_row, zone_rows[zone], std::nullopt};
    first_row += zone_rows[zone];
    const auto& zone_bounds = bounds[static_cast<size_t>(zone)];
    const auto verdict = TestRanges(field_ranges, zone_bounds, zone_rows[zone], bound_schema);
    bool keep = verdict != RangesVerdict::kExcluded;
    // Where the ranges are the whole filter and decided, the simplifier would add nothing.
    if (keep && simplify && (!field_ranges.whole || verdict == RangesVerdict::kUndecided)) {
      ARROW_ASSIGN_OR_RAISE(keep,
                            ZoneMayMatch(zone_bounds, zone_rows[zone], expression, bound_schema));
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
  if (!matches && plan.zones_skipped == 0) return std::nullopt;  // read as without statistics
  if (matches) plan.index_bytes_read = matches->omap_bytes;
  return plan;
}

arrow::Result<StatedZones> ZonesStatedBoundsAllow(ObjectReader* reader, const Expression& filter,
                                                  const arrow::Schema& schema) {
  const auto zone_rows = reader->known_zone_rows();
  const int count = reader->num_zones();
  StatedZones stated;
  int64_t nodes = 0;
  // Bounded depth (CheapToSimplify) before Positional recurses.
  auto positional =
      zone_rows.size() == static_cast<size_t>(count) && CheapToSimplify(filter, &nodes)
          ? Positional(filter, schema).Bind(schema)
          : arrow::Status::Invalid("not tested");
  if (!positional.ok()) {
    for (int zone = 0; zone < count; ++zone) stated.zones.push_back(zone);
    return stated;
  }
  ARROW_ASSIGN_OR_RAISE(auto bounds,
                        ZoneColumnBounds(reader, nullptr, zone_rows.size(), schema, *positional));
  stated.every_row_matches = true;
  for (int zone = 0; zone < count; ++zone) {
    const auto index = static_cast<size_t>(zone);
    ARROW_ASSIGN_OR_RAISE(auto verdict,
                          TestZone(bounds[index], zone_rows[index], *positional, schema));
    if (verdict == ZoneVerdict::kNoRow) continue;
    stated.zones.push_back(zone);
    stated.every_row_matches = stated.every_row_matches && verdict == ZoneVerdict::kEveryRow;
  }
  return stated;
}

arrow::Result<bool> ZoneBatches::SelectZone(const ZoneToRead& zone) {
  const SelectionLimits limits{kMaxSelectedShare, tried_selection_ ? 0 : kSampleRows};
  tried_selection_ = true;
  ARROW_ASSIGN_OR_RAISE(auto selection,
                        reader_->SelectZone(ranges_, fields_, zone.zone, limits, context_));
  if (!selection) {
    ranges_.clear();  // the later zones are read whole too
    return false;
  }
  // Rows before the position (a continued scan) were returned by earlier calls.
  const auto& rows = selection->rows;
  auto first = std::lower_bound(rows.begin(), rows.end(), position_ - zone.first_row);
  taken_ = selection->batch->Slice(first - rows.begin());
  taken_ends_.clear();
  for (auto row = first; row != rows.end(); ++row) taken_ends_.push_back(zone.first_row + *row + 1);
  selected_ = true;
  return true;
}

arrow::Status ZoneBatches::OpenZone(const ZoneToRead& zone) {
  zone_ = &zone;
  taken_.reset();
  batches_.reset();
  taken_offset_ = 0;
  selected_ = false;
  const int64_t skip = std::max<int64_t>(0, position_ - zone.first_row);
  position_ = std::max(position_, zone.first_row);
  if (!zone.rows && !ranges_.empty()) {
    ARROW_ASSIGN_OR_RAISE(bool selected, SelectZone(zone));
    if (selected) return arrow::Status::OK();
  }
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
      const int64_t before = position_;
      position_ = taken_offset_ == taken_->num_rows() ? zone_->first_row + zone_->num_rows
                                                      : taken_ends_[taken_offset_ - 1];
      rows_scanned_ += selected_ ? position_ - before : batch->num_rows();
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
        rows_scanned_ += batch->num_rows();
        return batch;
      }
    }
    if (zone_) {
      const int64_t end = zone_->first_row + zone_->num_rows;
      if (selected_ && end > position_) rows_scanned_ += end - position_;
      position_ = std::max(position_, end);
    }
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

arrow::Result<FilteredRows> FilteredRows::Open(ObjectContext* object, ObjectReader* reader,
                                               const arrow::engine::BoundExpressions* filter,
                                               const std::vector<int>& fields, int64_t batch_size,
                                               int64_t start_row, CallResources* resources) {
  FilteredRows rows;
  rows.position_ = start_row;
  if (filter) {
    bool whole = false;
    auto ranges = PhysicalRanges(filter->named_expressions[0].expression, *filter->schema,
                                 *reader->schema(), &whole);
    ARROW_ASSIGN_OR_RAISE(auto plan, PlanScanZones(object, reader, *filter, ranges, whole,
                                                   resources, &rows.secondary_rejected_));
    if (!reader->SelectsZones()) ranges.clear();  // no pre-filter
    if (!plan && !ranges.empty()) plan = EveryZone(*reader);
    if (plan) {
      rows.zones_skipped_ = plan->zones_skipped;
      rows.rows_read_by_index_ = plan->rows_read_by_index;
      rows.index_bytes_read_ = plan->index_bytes_read;
      rows.zoned_.emplace(std::move(*plan), reader, fields, std::move(ranges), batch_size,
                          start_row, resources->exec_context());
      return rows;
    }
  }
  ARROW_ASSIGN_OR_RAISE(rows.batches_, reader->ReadFields(fields, batch_size, start_row));
  return rows;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> FilteredRows::Next() {
  if (zoned_) return zoned_->Next();
  std::shared_ptr<arrow::RecordBatch> batch;
  ARROW_RETURN_NOT_OK(batches_->ReadNext(&batch));
  if (batch != nullptr) {
    position_ += batch->num_rows();
    rows_scanned_ += batch->num_rows();
  }
  return batch;
}

}  // namespace skyhook
