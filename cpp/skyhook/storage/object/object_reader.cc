#include "skyhook/storage/object/object_reader.h"

#include <algorithm>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/column_groups_reader.h"
#include "skyhook/storage/object/ipc_object_reader.h"
#include "skyhook/storage/object/parquet_object_reader.h"
#include "skyhook/storage/object/row_object_reader.h"

namespace skyhook {

arrow::Status UnreadableFormat(const std::string& format, const arrow::Status& cause,
                               const ObjectFile* file) {
  // Arrow's IPC reader wraps a read's error in its own text: the mismatch as the file met it.
  if (file != nullptr && !file->damage().ok()) return file->damage();
  if (CodeOf(cause) != ErrorCode::kInternal) return cause;  // a node limit, say
  return Error(ErrorCode::kCorruptObject, "object is not a readable ", format,
               " partition: ", cause.message());
}

arrow::Result<std::shared_ptr<arrow::Schema>> ObjectReader::FieldsSchema(
    const std::vector<int>& field_indices) const {
  arrow::FieldVector fields;
  for (int index : field_indices) {
    if (index < 0 || index >= schema()->num_fields()) {
      return arrow::Status::IndexError("field ", index, " is not in the object");
    }
    fields.push_back(schema()->field(index));
  }
  return arrow::schema(std::move(fields));
}

namespace {

// The rows of fixed-size zones, for formats without natural units.
class DefaultZonesReader : public arrow::RecordBatchReader {
 public:
  DefaultZonesReader(ObjectReader* object, std::vector<int> fields, int64_t batch_size,
                     std::vector<int> zones, std::shared_ptr<arrow::Schema> schema)
      : object_(object),
        fields_(std::move(fields)),
        batch_size_(batch_size),
        zones_(std::move(zones)),
        schema_(std::move(schema)) {}

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }

  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* out) override {
    while (true) {
      if (current_ && rows_left_ > 0) {
        ARROW_RETURN_NOT_OK(current_->ReadNext(out));
        if (*out != nullptr) {
          if ((*out)->num_rows() > rows_left_) *out = (*out)->Slice(0, rows_left_);
          rows_left_ -= (*out)->num_rows();
          return arrow::Status::OK();
        }
      }
      if (next_ >= zones_.size()) {
        *out = nullptr;
        return arrow::Status::OK();
      }
      const int64_t start = zones_[next_++] * ObjectReader::kDefaultZoneRows;
      ARROW_ASSIGN_OR_RAISE(current_, object_->ReadFields(fields_, batch_size_, start));
      rows_left_ = ObjectReader::kDefaultZoneRows;
    }
  }

 private:
  ObjectReader* object_;
  std::vector<int> fields_;
  int64_t batch_size_;
  std::vector<int> zones_;
  std::shared_ptr<arrow::Schema> schema_;
  size_t next_ = 0;
  std::shared_ptr<arrow::RecordBatchReader> current_;
  int64_t rows_left_ = 0;
};

}  // namespace

int ObjectReader::num_zones() const {
  return static_cast<int>((num_rows() + kDefaultZoneRows - 1) / kDefaultZoneRows);
}

std::vector<int64_t> ObjectReader::known_zone_rows() const {
  // A hostile row count would make the list itself unbounded (the fuzzer's
  // 10 s timeout); past 2^32 rows no object has zones.
  constexpr int64_t kMaxZones = int64_t{1} << 16;
  auto rows = known_num_rows();
  if (!rows || *rows / kDefaultZoneRows >= kMaxZones) return {};
  std::vector<int64_t> zones;
  for (int64_t first = 0; first < *rows; first += kDefaultZoneRows) {
    zones.push_back(std::min(kDefaultZoneRows, *rows - first));
  }
  return zones;
}

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ObjectReader::ReadZones(
    const std::vector<int>& field_indices, int64_t batch_size, std::vector<int> zones) {
  for (int zone : zones) {
    if (zone < 0 || zone >= num_zones()) return arrow::Status::IndexError("no zone ", zone);
  }
  return ReadExistingZones(field_indices, batch_size, std::move(zones));
}

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ObjectReader::ReadExistingZones(
    const std::vector<int>& field_indices, int64_t batch_size, std::vector<int> zones) {
  ARROW_ASSIGN_OR_RAISE(auto schema, FieldsSchema(field_indices));
  return std::make_shared<DefaultZonesReader>(this, field_indices, batch_size, std::move(zones),
                                              std::move(schema));
}

arrow::Result<std::unique_ptr<ObjectReader>> ObjectReader::OpenFormat(
    ObjectFormat format, std::shared_ptr<ObjectFile> extent, arrow::MemoryPool* pool) {
  switch (format) {
    case ObjectFormat::kParquet:
      return OpenParquetObject(std::move(extent), pool);
    case ObjectFormat::kIpc:
      return OpenIpcObject(std::move(extent), pool);
    case ObjectFormat::kRows:
      return OpenRowObject(std::move(extent), pool);
  }
  return Error(ErrorCode::kCorruptObject, "object has an unknown format");
}

arrow::Result<uint64_t> ObjectReader::ObjectSize(ObjectContext* object) {
  auto size = object->Size();
  if (!size.ok()) {
    return Error(ErrorCode::kNotFound, "object cannot be opened: ", size.status().message());
  }
  return size;
}

arrow::Result<std::unique_ptr<ObjectReader>> ObjectReader::Open(
    ObjectContext* object, arrow::MemoryPool* pool, const std::vector<std::string>* only_columns) {
  ARROW_RETURN_NOT_OK(ObjectSize(object));
  ARROW_ASSIGN_OR_RAISE(auto design, ReadDesign(object));
  return Open(object, design, pool, only_columns);
}

arrow::Result<std::unique_ptr<ObjectReader>> ObjectReader::Open(
    ObjectContext* object, const ObjectDesign& design, arrow::MemoryPool* pool,
    const std::vector<std::string>* only_columns) {
  if (!design.monolithic()) {
    return OpenColumnGroups(object, only_columns ? GroupsHolding(design, *only_columns) : design,
                            pool);
  }
  const ColumnGroup& extent = design.column_groups[0];
  ARROW_ASSIGN_OR_RAISE(auto file, ObjectFile::OpenExtent(object, extent));
  ARROW_ASSIGN_OR_RAISE(auto reader, OpenFormat(design.format, std::move(file), pool));
  ARROW_RETURN_NOT_OK(CheckExtent(*reader, design, extent));
  return reader;
}

}  // namespace skyhook
