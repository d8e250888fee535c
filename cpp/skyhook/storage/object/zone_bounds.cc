#include "skyhook/storage/object/zone_bounds.h"

#include <exception>

#include <arrow/compute/api_scalar.h>
#include <arrow/compute/exec.h>
#include <parquet/arrow/schema.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/statistics.h>

#include "skyhook/storage/object/physical_range.h"

namespace skyhook {
namespace {

bool IsFloating(const arrow::DataType& type) { return arrow::is_floating(type.id()); }

// One row group's column chunk; throws what parquet's accessors throw.
std::optional<ColumnBounds> ChunkBounds(const parquet::RowGroupMetaData& row_group, int leaf,
                                        const arrow::DataType& type) {
  const int64_t rows = row_group.num_rows();
  auto chunk = row_group.ColumnChunk(leaf);
  // Null only when the writer's version is known to write wrong statistics.
  auto statistics = chunk->statistics();
  if (statistics == nullptr || rows < 0) return std::nullopt;
  ColumnBounds bounds;
  bounds.may_hold_nan = IsFloating(type);
  if (statistics->HasNullCount()) {
    const int64_t nulls = statistics->null_count();
    if (nulls < 0 || nulls > rows) return std::nullopt;
    if (nulls == 0 || nulls == rows) bounds.null_count = nulls;
    if (nulls == rows) return bounds;
  }
  // Inexact (truncated) values are bounds still, as the format requires.
  std::shared_ptr<arrow::Scalar> min, max;
  if (!statistics->HasMinMax() ||
      !parquet::arrow::StatisticsAsScalars(*statistics, &min, &max).ok() || min == nullptr ||
      max == nullptr || !min->type->Equals(type) || !max->type->Equals(type) || !min->is_valid ||
      !max->is_valid || !min->ValidateFull().ok() || !max->ValidateFull().ok() ||
      !Ordered(min, max)) {
    return std::nullopt;
  }
  bounds.min = std::move(min);
  bounds.max = std::move(max);
  return bounds;
}

}  // namespace

// min <= max, which also refuses NaN (no comparison with it holds). Integer
// domains compare directly (a compute call costs a function lookup and a dispatch).
bool Ordered(const std::shared_ptr<arrow::Scalar>& min, const std::shared_ptr<arrow::Scalar>& max) {
  const auto low = IntegerDomainValue(*min);
  const auto high = IntegerDomainValue(*max);
  if (low && high) return *low <= *high;
  auto ordered = arrow::compute::CallFunction("less_equal", {min, max});
  if (!ordered.ok() || !ordered->is_scalar()) return false;
  const auto& value = ordered->scalar_as<arrow::BooleanScalar>();
  return value.is_valid && value.value;
}

std::vector<std::optional<ColumnBounds>> RowGroupBounds(const parquet::arrow::FileReader& reader,
                                                        int field, const arrow::DataType& type) {
  try {
    const auto& fields = reader.manifest().schema_fields;
    if (field < 0 || field >= static_cast<int>(fields.size())) return {};
    const auto& schema_field = fields[static_cast<size_t>(field)];
    // A top-level value per row: its nulls are the column chunk's nulls.
    if (!schema_field.is_leaf() || schema_field.level_info.rep_level != 0 ||
        schema_field.level_info.def_level > 1) {
      return {};
    }
    auto metadata = reader.parquet_reader()->metadata();
    std::vector<std::optional<ColumnBounds>> bounds;
    for (int group = 0; group < metadata->num_row_groups(); ++group) {
      bounds.push_back(ChunkBounds(*metadata->RowGroup(group), schema_field.column_index, type));
    }
    return bounds;
  } catch (const std::exception&) {
    return {};  // a footer parquet cannot read: nothing is known
  }
}

std::optional<ColumnBounds> BoundsOfRows(const std::vector<std::optional<ColumnBounds>>& zones,
                                         const std::vector<int64_t>& zone_rows, int64_t first_row,
                                         int64_t num_rows) {
  int64_t zone_start = 0;
  for (size_t zone = 0; zone < zones.size() && zone < zone_rows.size(); ++zone) {
    const int64_t zone_end = zone_start + zone_rows[zone];
    if (zone_start <= first_row && first_row + num_rows <= zone_end) {
      if (!zones[zone]) return std::nullopt;
      ColumnBounds part = *zones[zone];
      if (part.null_count == zone_rows[zone]) part.null_count = num_rows;  // all null
      return part;
    }
    zone_start = zone_end;
  }
  return std::nullopt;  // the rows span zones
}

}  // namespace skyhook
