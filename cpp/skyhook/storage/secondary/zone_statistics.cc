#include "skyhook/storage/secondary/zone_statistics.h"

#include <numeric>
#include <optional>
#include <vector>

#include <arrow/array/array_nested.h>
#include <arrow/array/builder_binary.h>
#include <arrow/array/builder_primitive.h>
#include <arrow/array/concatenate.h>
#include <arrow/array/util.h>
#include <arrow/compute/cast.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/zone_bounds.h"
#include "skyhook/storage/secondary/distinct_sketch.h"
#include "skyhook/storage/secondary/equi_depth_histogram.h"
#include "skyhook/storage/secondary/omap_value.h"
#include "skyhook/storage/secondary/secondary_design.h"
#include "skyhook/storage/statistics/column_statistics.h"

namespace skyhook {
namespace {

constexpr int kLeadingColumns = 3;  // zone, first_row, num_rows

std::shared_ptr<arrow::DataType> ColumnStatisticsType(
    const std::shared_ptr<arrow::DataType>& type) {
  return arrow::struct_(
      {arrow::field("min", type), arrow::field("max", type),
       arrow::field("null_count", arrow::int64()), arrow::field("distinct", arrow::int64()),
       arrow::field("histogram", arrow::list(type)), arrow::field("sketch", arrow::binary())});
}

arrow::Status CheckTime(const CallResources& resources) {
  if (!resources.OutOfTime()) return arrow::Status::OK();
  return Error(ErrorCode::kLimitExceeded,
               "analyzing the object takes longer than the node's limit of ",
               resources.limits().max_call_ms, " ms per call");
}

// Values the sketch and histogram see: a dictionary's values.
arrow::Result<std::shared_ptr<arrow::Array>> Plain(const std::shared_ptr<arrow::Array>& values,
                                                   arrow::compute::ExecContext* context) {
  if (values->type_id() != arrow::Type::DICTIONARY) return values;
  const auto& type = static_cast<const arrow::DictionaryType&>(*values->type());
  return arrow::compute::Cast(*values, type.value_type(), arrow::compute::CastOptions::Safe(),
                              context);
}

// One column's struct array: a row per zone, then the object's row.
class ColumnStatisticsBuilder {
 public:
  ColumnStatisticsBuilder(std::shared_ptr<arrow::DataType> type, CallResources* resources)
      : type_(std::move(type)), resources_(resources), object_(type_, resources->exec_context()) {}

  arrow::Status AddZone(const std::shared_ptr<arrow::Array>& values) {
    ColumnStatistics zone(type_, resources_->exec_context());
    ARROW_RETURN_NOT_OK(zone.Update(values));
    ARROW_RETURN_NOT_OK(object_.Update(values));
    ARROW_ASSIGN_OR_RAISE(auto row, zone.Finish());
    ARROW_ASSIGN_OR_RAISE(auto plain, Plain(values, resources_->exec_context()));
    int64_t distinct = -1;
    if (DistinctSketch::Supports(*plain->type())) {
      DistinctSketch sketch;
      ARROW_RETURN_NOT_OK(sketch.Update(*plain));
      distinct = sketch.Estimate();
      sketch_.Merge(sketch);
      sketched_ = true;
    }
    ARROW_RETURN_NOT_OK(AddRow(*row, distinct, nullptr, std::nullopt));
    plain_.push_back(std::move(plain));
    return arrow::Status::OK();
  }

  arrow::Result<std::shared_ptr<arrow::Array>> Finish() {
    ARROW_ASSIGN_OR_RAISE(auto row, object_.Finish());
    std::shared_ptr<arrow::Array> bounds;
    if (!plain_.empty() && plain_[0]->type()->Equals(*type_)) {
      ARROW_ASSIGN_OR_RAISE(auto all, arrow::Concatenate(plain_, resources_->pool()));
      ARROW_ASSIGN_OR_RAISE(bounds, EquiDepthBounds(all, resources_->exec_context()));
    }
    ARROW_RETURN_NOT_OK(AddRow(*row, sketched_ ? sketch_.Estimate() : -1, bounds,
                               sketched_ ? std::optional(sketch_.registers()) : std::nullopt));
    ARROW_ASSIGN_OR_RAISE(auto min, arrow::Concatenate(min_, resources_->pool()));
    ARROW_ASSIGN_OR_RAISE(auto max, arrow::Concatenate(max_, resources_->pool()));
    ARROW_ASSIGN_OR_RAISE(auto nulls, null_counts_.Finish());
    ARROW_ASSIGN_OR_RAISE(auto distinct, distinct_.Finish());
    ARROW_ASSIGN_OR_RAISE(auto histogram, Histograms());
    ARROW_ASSIGN_OR_RAISE(auto sketches, sketches_.Finish());
    auto type = ColumnStatisticsType(type_);
    return std::make_shared<arrow::StructArray>(
        type, min->length(), arrow::ArrayVector{min, max, nulls, distinct, histogram, sketches});
  }

 private:
  arrow::Status AddRow(const arrow::StructArray& row, int64_t distinct,
                       const std::shared_ptr<arrow::Array>& bounds,
                       std::optional<std::string_view> sketch) {
    min_.push_back(row.field(0));
    max_.push_back(row.field(1));
    ARROW_RETURN_NOT_OK(
        null_counts_.Append(static_cast<const arrow::Int64Array&>(*row.field(2)).Value(0)));
    ARROW_RETURN_NOT_OK(distinct >= 0 ? distinct_.Append(distinct) : distinct_.AppendNull());
    histogram_bounds_.push_back(bounds);
    return sketch ? sketches_.Append(*sketch) : sketches_.AppendNull();
  }

  // A list per row: the bounds where there are any, null elsewhere.
  arrow::Result<std::shared_ptr<arrow::Array>> Histograms() {
    arrow::Int32Builder offsets;
    std::vector<bool> valid;
    arrow::ArrayVector values;
    int32_t end = 0;
    ARROW_RETURN_NOT_OK(offsets.Append(0));
    for (const auto& bounds : histogram_bounds_) {
      valid.push_back(bounds != nullptr);
      if (bounds) {
        values.push_back(bounds);
        end += static_cast<int32_t>(bounds->length());
      }
      ARROW_RETURN_NOT_OK(offsets.Append(end));
    }
    std::shared_ptr<arrow::Array> flat;
    if (values.empty()) {
      ARROW_ASSIGN_OR_RAISE(flat, arrow::MakeEmptyArray(type_, resources_->pool()));
    } else {
      ARROW_ASSIGN_OR_RAISE(flat, arrow::Concatenate(values, resources_->pool()));
    }
    arrow::BooleanBuilder validity;
    for (bool v : valid) ARROW_RETURN_NOT_OK(validity.Append(v));
    ARROW_ASSIGN_OR_RAISE(auto offset_array, offsets.Finish());
    ARROW_ASSIGN_OR_RAISE(auto validity_array, validity.Finish());
    return arrow::ListArray::FromArrays(*offset_array, *flat, resources_->pool(),
                                        validity_array->data()->buffers[1]);
  }

  std::shared_ptr<arrow::DataType> type_;
  CallResources* resources_;
  ColumnStatistics object_;
  DistinctSketch sketch_;
  bool sketched_ = false;
  arrow::ArrayVector plain_, min_, max_;
  std::vector<std::shared_ptr<arrow::Array>> histogram_bounds_;
  arrow::Int64Builder null_counts_, distinct_;
  arrow::BinaryBuilder sketches_;
};

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ComputeZoneStatistics(ObjectReader* reader,
                                                                         CallResources* resources) {
  const auto& schema = reader->schema();
  std::vector<int> all_fields(schema->num_fields());
  std::iota(all_fields.begin(), all_fields.end(), 0);
  // Arrow's builders inside must not move: one allocation each.
  std::vector<std::unique_ptr<ColumnStatisticsBuilder>> builders;
  for (const auto& field : schema->fields()) {
    builders.push_back(std::make_unique<ColumnStatisticsBuilder>(field->type(), resources));
  }
  arrow::Int32Builder zone_ids;
  arrow::Int64Builder first_rows, zone_rows;
  int64_t first_row = 0;
  // A zone at a time, every column: one reader per zone, not per zone and column.
  for (int zone = 0; zone < reader->num_zones(); ++zone) {
    ARROW_RETURN_NOT_OK(CheckTime(*resources));
    ARROW_ASSIGN_OR_RAISE(auto batches,
                          reader->ReadZones(all_fields, ObjectReader::kZoneBatchRows, {zone}));
    ARROW_ASSIGN_OR_RAISE(auto list, batches->ToRecordBatches());
    int64_t rows = 0;
    for (const auto& batch : list) rows += batch->num_rows();
    for (int column = 0; column < schema->num_fields(); ++column) {
      arrow::ArrayVector chunks;
      for (const auto& batch : list) chunks.push_back(batch->column(column));
      std::shared_ptr<arrow::Array> values;
      if (chunks.empty()) {
        ARROW_ASSIGN_OR_RAISE(
            values, arrow::MakeEmptyArray(schema->field(column)->type(), resources->pool()));
      } else {
        ARROW_ASSIGN_OR_RAISE(values, arrow::Concatenate(chunks, resources->pool()));
      }
      ARROW_RETURN_NOT_OK(builders[column]->AddZone(values));
    }
    ARROW_RETURN_NOT_OK(zone_ids.Append(zone));
    ARROW_RETURN_NOT_OK(first_rows.Append(first_row));
    ARROW_RETURN_NOT_OK(zone_rows.Append(rows));
    first_row += rows;
  }
  ARROW_RETURN_NOT_OK(zone_ids.Append(-1));
  ARROW_RETURN_NOT_OK(first_rows.Append(0));
  ARROW_RETURN_NOT_OK(zone_rows.Append(first_row));
  arrow::FieldVector fields = {arrow::field("zone", arrow::int32()),
                               arrow::field("first_row", arrow::int64()),
                               arrow::field("num_rows", arrow::int64())};
  arrow::ArrayVector columns(kLeadingColumns);
  ARROW_ASSIGN_OR_RAISE(columns[0], zone_ids.Finish());
  ARROW_ASSIGN_OR_RAISE(columns[1], first_rows.Finish());
  ARROW_ASSIGN_OR_RAISE(columns[2], zone_rows.Finish());
  for (int column = 0; column < schema->num_fields(); ++column) {
    ARROW_RETURN_NOT_OK(CheckTime(*resources));
    ARROW_ASSIGN_OR_RAISE(auto statistics, builders[column]->Finish());
    fields.push_back(arrow::field(schema->field(column)->name(), statistics->type()));
    columns.push_back(std::move(statistics));
  }
  const int64_t rows = columns[0]->length();
  return arrow::RecordBatch::Make(arrow::schema(fields), rows, std::move(columns));
}

int StatisticsColumn(const arrow::RecordBatch& statistics, const std::string& name) {
  // Not GetFieldIndex: an object may have a column named like a leading one.
  for (int index = kLeadingColumns; index < statistics.num_columns(); ++index) {
    if (statistics.schema()->field(index)->name() == name) return index;
  }
  return -1;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> LoadZoneStatistics(
    ObjectContext* object, const arrow::Schema& object_schema, const std::string& identity) {
  ARROW_ASSIGN_OR_RAISE(auto value, object->GetOmap(kStatisticsKey));
  if (!value) return nullptr;
  ARROW_ASSIGN_OR_RAISE(auto batch, DecodeOmapValue(*value, kStatisticsKey));
  if (!DescribesData(*batch, identity)) return nullptr;
  // Statistics of this very data must fit its schema; anything else is corrupt.
  // The schema may be some of the object's columns (a reader of some column groups).
  const auto& schema = *batch->schema();
  bool fits = schema.num_fields() >= kLeadingColumns + object_schema.num_fields() &&
              schema.field(0)->type()->Equals(*arrow::int32()) &&
              schema.field(1)->type()->Equals(*arrow::int64()) &&
              schema.field(2)->type()->Equals(*arrow::int64()) && batch->num_rows() >= 1;
  for (int i = 0; fits && i < object_schema.num_fields(); ++i) {
    int column = StatisticsColumn(*batch, object_schema.field(i)->name());
    fits = column >= 0 && schema.field(column)->type()->Equals(
                              *ColumnStatisticsType(object_schema.field(i)->type()));
  }
  if (!fits) {
    return Error(ErrorCode::kCorruptObject, "the object's omap value ", kStatisticsKey,
                 " does not fit the object's columns");
  }
  return batch;
}

bool StatisticsProven(const arrow::RecordBatch& statistics, const ObjectReader& reader,
                      const std::vector<int>& columns) {
  const auto& zones = static_cast<const arrow::Int32Array&>(*statistics.column(0));
  const auto& first_rows = static_cast<const arrow::Int64Array&>(*statistics.column(1));
  const auto& rows = static_cast<const arrow::Int64Array&>(*statistics.column(2));
  const int64_t count = statistics.num_rows() - 1;  // then the whole object's row
  if (count != reader.num_zones() ||
      zones.null_count() + first_rows.null_count() + rows.null_count() > 0) {
    return false;
  }
  const auto known = reader.known_zone_rows();
  int64_t next = 0;
  for (int64_t zone = 0; zone < count; ++zone) {
    if (zones.Value(zone) != zone || first_rows.Value(zone) != next || rows.Value(zone) < 0 ||
        (!known.empty() && rows.Value(zone) != known[static_cast<size_t>(zone)])) {
      return false;
    }
    next += rows.Value(zone);
  }
  if (zones.Value(count) != -1 || rows.Value(count) != next || next != reader.num_rows()) {
    return false;
  }
  for (int column : columns) {
    const auto& stats = static_cast<const arrow::StructArray&>(*statistics.column(column));
    const auto& nulls = static_cast<const arrow::Int64Array&>(*stats.field(2));
    for (int64_t zone = 0; zone <= count; ++zone) {
      if (stats.IsNull(zone) || nulls.IsNull(zone) || nulls.Value(zone) < 0 ||
          nulls.Value(zone) > rows.Value(zone) ||
          stats.field(0)->IsNull(zone) != stats.field(1)->IsNull(zone)) {
        return false;
      }
      if (stats.field(0)->IsNull(zone)) continue;
      auto min = stats.field(0)->GetScalar(zone);
      auto max = stats.field(1)->GetScalar(zone);
      if (!min.ok() || !max.ok() || !Ordered(*min, *max)) return false;
    }
  }
  return true;
}

}  // namespace skyhook
