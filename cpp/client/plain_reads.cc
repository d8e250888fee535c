#include "plain_reads.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>

#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>
#include <arrow/util/byte_size.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/object_design.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/runtime/kept_rows.h"
#include "skyhook/storage/secondary/scan_zones.h"

namespace skyhook {

namespace {

// The indices of the schema's fields among columns (all when none given).
std::vector<int> FieldsAmong(const arrow::Schema& schema,
                             const std::optional<std::vector<std::string>>& columns) {
  std::vector<int> fields;
  for (int index = 0; index < schema.num_fields(); ++index) {
    const auto& name = schema.field(index)->name();
    if (!columns || std::find(columns->begin(), columns->end(), name) != columns->end()) {
      fields.push_back(index);
    }
  }
  return fields;
}

// The batches' rows the filter keeps, evaluated as pyarrow would at the
// client, without its per-call plan; nullopt (the client filters) unless every
// column the filter reads is decoded once with the dataset's type, or when the
// evaluation fails (the client then reports the failure as it always does).
std::optional<arrow::RecordBatchVector> Filtered(const arrow::RecordBatchVector& batches,
                                                 const arrow::Schema& decoded,
                                                 const DatasetFilter& filter) {
  std::vector<int> columns;
  arrow::FieldVector fields;
  for (const auto& ref : arrow::compute::FieldsInExpression(filter.expression)) {
    auto field = ref.GetOneOrNone(*filter.schema);
    if (!field.ok() || *field == nullptr) return std::nullopt;
    const int index = decoded.GetFieldIndex((*field)->name());
    if (index < 0 || !decoded.field(index)->type()->Equals(*(*field)->type())) return std::nullopt;
    // A column read twice (a range's two bounds) is one field of the schema bound.
    if (std::find(columns.begin(), columns.end(), index) != columns.end()) continue;
    columns.push_back(index);
    fields.push_back(*field);
  }
  const auto read = arrow::schema(std::move(fields));
  auto bound = filter.expression.Bind(*read);
  if (!bound.ok()) return std::nullopt;
  arrow::RecordBatchVector kept;
  for (const auto& batch : batches) {
    auto selected = batch->SelectColumns(columns);
    if (!selected.ok()) return std::nullopt;
    auto mask = arrow::compute::ExecuteScalarExpression(*bound, *read, *selected);
    if (!mask.ok()) return std::nullopt;
    auto rows = KeptRows(batch, *mask, arrow::compute::default_exec_context());
    if (!rows.ok()) return std::nullopt;
    kept.push_back(std::move(*rows));
  }
  return kept;
}

}  // namespace

void ReadParts::Add(uint64_t offset, std::shared_ptr<arrow::Buffer> bytes) {
  auto place =
      std::upper_bound(parts_.begin(), parts_.end(), offset,
                       [](uint64_t start, const Part& part) { return start < part.first; });
  parts_.emplace(place, offset, std::move(bytes));
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ReadParts::Read(uint64_t offset, uint64_t length) {
  // The parts that hold [offset, covered), in order; each starts within the one before.
  std::vector<const Part*> covering;
  uint64_t covered = offset;
  bool touched = false;  // a part starts or ends at offset: an empty read is served
  for (const auto& part : parts_) {
    if (part.first > covered) break;  // a gap: no later part starts sooner
    const uint64_t end = part.first + static_cast<uint64_t>(part.second->size());
    touched = touched || end >= offset;
    if (end <= covered) continue;
    covering.push_back(&part);
    covered = end;
    if (covered - offset >= length) break;
  }
  if (length == 0 && touched) return std::make_shared<arrow::Buffer>(nullptr, 0);
  if (covering.empty()) {
    return arrow::Status::IOError("bytes at ", offset, " of the object were not read");
  }
  const uint64_t available = std::min(length, covered - offset);
  const Part& first = *covering.front();
  if (first.first + static_cast<uint64_t>(first.second->size()) >= offset + available) {
    return arrow::SliceBuffer(first.second, static_cast<int64_t>(offset - first.first),
                              static_cast<int64_t>(available));
  }
  ARROW_ASSIGN_OR_RAISE(auto joined, arrow::AllocateBuffer(static_cast<int64_t>(available)));
  uint64_t position = offset;
  for (const Part* part : covering) {
    const uint64_t end =
        std::min(offset + available, part->first + static_cast<uint64_t>(part->second->size()));
    if (end <= position) continue;
    std::memcpy(joined->mutable_data() + (position - offset),
                part->second->data() + (position - part->first), end - position);
    position = end;
  }
  return std::shared_ptr<arrow::Buffer>(std::move(joined));
}

arrow::Result<std::optional<std::string>> ReadParts::GetXattr(const std::string& name) {
  if (name == kDesignAttribute) return design_;
  if (name == kFormatAttribute) return format_;
  return std::nullopt;
}

std::optional<DatasetFilter> BoundFilter(const std::shared_ptr<arrow::Buffer>& filter,
                                         const std::shared_ptr<arrow::Buffer>& schema) {
  if (filter == nullptr || schema == nullptr) return std::nullopt;
  arrow::io::BufferReader schema_stream(schema);
  arrow::ipc::DictionaryMemo memo;
  auto dataset_schema = arrow::ipc::ReadSchema(&schema_stream, &memo);
  auto expression = arrow::compute::Deserialize(filter);
  if (!dataset_schema.ok() || !expression.ok()) return std::nullopt;
  auto bound = expression->Bind(**dataset_schema);
  if (!bound.ok()) return std::nullopt;
  return DatasetFilter{std::move(*bound), std::move(*dataset_schema)};
}

arrow::Result<Decoded> DecodeObject(ObjectContext* object,
                                    const std::optional<std::vector<std::string>>& columns,
                                    const std::optional<std::vector<int>>& row_groups,
                                    const std::optional<DatasetFilter>& filter) {
  if (row_groups && !std::is_sorted(row_groups->begin(), row_groups->end(), std::less_equal<>())) {
    return Error(ErrorCode::kInvalidRequest, "the row groups to read are not ascending");
  }
  ARROW_ASSIGN_OR_RAISE(auto reader, ObjectReader::Open(object, arrow::default_memory_pool(),
                                                        columns ? &*columns : nullptr));
  auto schema = reader->schema();
  const auto fields = FieldsAmong(*schema, columns);
  constexpr int64_t kBatchRows = 64 * 1024;
  ARROW_ASSIGN_OR_RAISE(auto batches, row_groups
                                          ? reader->ReadZones(fields, kBatchRows, *row_groups)
                                          : reader->ReadFields(fields, kBatchRows));
  ARROW_ASSIGN_OR_RAISE(auto decoded, batches->ToRecordBatches());
  Decoded result;
  for (const auto& batch : decoded) {
    result.rows += batch->num_rows();
    result.bytes += arrow::util::TotalBufferSize(*batch);
  }
  if (filter) {
    if (auto kept = Filtered(decoded, *batches->schema(), *filter)) {
      decoded = std::move(*kept);
      result.filtered = true;
    }
  }
  ARROW_ASSIGN_OR_RAISE(result.object_schema, arrow::ipc::SerializeSchema(*schema));
  ARROW_ASSIGN_OR_RAISE(result.batches,
                        arrow::RecordBatchReader::Make(std::move(decoded), batches->schema()));
  return result;
}

arrow::Result<std::optional<ZonesToRead>> PlanZones(
    ObjectContext* object, const std::optional<std::vector<std::string>>& columns,
    const std::optional<DatasetFilter>& filter) {
  ARROW_ASSIGN_OR_RAISE(auto reader, ObjectReader::Open(object, arrow::default_memory_pool(),
                                                        columns ? &*columns : nullptr));
  StatedZones stated;
  if (filter) {
    ARROW_ASSIGN_OR_RAISE(
        stated, ZonesStatedBoundsAllow(reader.get(), filter->expression, *filter->schema));
  } else {
    stated.zones.resize(static_cast<size_t>(std::max(0, reader->num_zones())));
    std::iota(stated.zones.begin(), stated.zones.end(), 0);
  }
  auto ranges = reader->ZoneRanges(FieldsAmong(*reader->schema(), columns), stated.zones);
  if (!ranges) return std::nullopt;
  return std::make_tuple(std::move(stated.zones), std::move(*ranges), stated.every_row_matches);
}

}  // namespace skyhook
