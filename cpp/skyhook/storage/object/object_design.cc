#include "skyhook/storage/object/object_design.h"

#include <algorithm>
#include <set>
#include <utility>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>
#include <arrow/record_batch.h>
#include <arrow/table_builder.h>
#include <arrow/type.h>

#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

constexpr int64_t kMaxRowGroupSize = int64_t{1} << 24;
constexpr size_t kMaxDesignBytes = 1 << 20;

std::shared_ptr<arrow::DataType> SortKeyType() {
  return arrow::struct_({arrow::field("column", arrow::utf8(), false),
                         arrow::field("descending", arrow::boolean(), false)});
}

std::shared_ptr<arrow::DataType> ColumnGroupType() {
  return arrow::struct_(
      {arrow::field("columns", arrow::list(arrow::field("item", arrow::utf8(), false)), false),
       arrow::field("offset", arrow::int64(), false),
       arrow::field("length", arrow::int64(), false)});
}

// The attribute's schema; python/skyhook/catalog/design.py writes the same.
std::shared_ptr<arrow::Schema> DesignSchema() {
  return arrow::schema({
      arrow::field("version", arrow::int32(), false),
      arrow::field("format", arrow::utf8(), false),
      arrow::field("column_groups", arrow::list(arrow::field("item", ColumnGroupType(), false)),
                   false),
      arrow::field("sort_by", arrow::list(arrow::field("item", SortKeyType(), false)), false),
      arrow::field("compression", arrow::utf8(), false),
      arrow::field("row_group_size", arrow::int64(), false),
      arrow::field("num_rows", arrow::int64(), false),
      arrow::field("generation", arrow::int64(), false),
  });
}

std::shared_ptr<arrow::DataType> ChecksumsType() {
  return arrow::list(
      arrow::field("item",
                   arrow::struct_({arrow::field("chunk_bytes", arrow::int64(), false),
                                   arrow::field("table_offset", arrow::int64(), false),
                                   arrow::field("tail_crc", arrow::uint32(), false)}),
                   false));
}

// Fields of objects written since checksums; older readers pass them by.
constexpr char kChecksumsField[] = "checksums";
constexpr char kSelfChecksumField[] = "checksum";

arrow::Status Corrupt(const std::string& problem) {
  return Error(ErrorCode::kCorruptObject, "object has a malformed ", kDesignAttribute,
               " attribute: ", problem);
}

bool KnownCompression(const std::string& name) {
  return name == "none" || name == "lz4" || name == "zstd";
}

// Structure shared by what a writer is asked for and what an object carries.
std::optional<std::string> StructuralProblem(const ObjectDesign& design) {
  if (design.column_groups.empty()) return "it has no column groups";
  std::set<std::string> seen;
  for (const auto& group : design.column_groups) {
    if (group.columns.empty() && design.column_groups.size() > 1) {
      return "a column group without columns is only allowed alone";
    }
    for (const auto& column : group.columns) {
      if (!seen.insert(column).second) return "column '" + column + "' is in two groups";
    }
  }
  if (design.format == ObjectFormat::kRows && design.column_groups.size() > 1) {
    return "a rows object keeps all its columns in one group";
  }
  for (const auto& key : design.sort_by) {
    if (key.column.empty()) return "a sort key names no column";
  }
  if (design.row_group_size < 1 || design.row_group_size > kMaxRowGroupSize) {
    return "row group size " + std::to_string(design.row_group_size) + " is outside 1 .. 2^24";
  }
  return std::nullopt;
}

template <typename ArrayType>
const ArrayType& Column(const arrow::RecordBatch& batch, const char* name) {
  return static_cast<const ArrayType&>(*batch.GetColumnByName(name));
}

arrow::Result<ObjectDesign> FromBatch(const arrow::RecordBatch& batch) {
  ObjectDesign design;
  ARROW_ASSIGN_OR_RAISE(design.format,
                        ParseFormat(Column<arrow::StringArray>(batch, "format").GetView(0)));
  design.compression = Column<arrow::StringArray>(batch, "compression").GetString(0);
  design.row_group_size = Column<arrow::Int64Array>(batch, "row_group_size").Value(0);
  design.num_rows = Column<arrow::Int64Array>(batch, "num_rows").Value(0);
  design.generation = Column<arrow::Int64Array>(batch, "generation").Value(0);

  const auto& groups = Column<arrow::ListArray>(batch, "column_groups");
  const auto& group_values = static_cast<const arrow::StructArray&>(*groups.values());
  const auto& group_columns = static_cast<const arrow::ListArray&>(*group_values.field(0));
  const auto& names = static_cast<const arrow::StringArray&>(*group_columns.values());
  const auto& offsets = static_cast<const arrow::Int64Array&>(*group_values.field(1));
  const auto& lengths = static_cast<const arrow::Int64Array&>(*group_values.field(2));
  for (int64_t g = groups.value_offset(0); g < groups.value_offset(1); ++g) {
    if (offsets.Value(g) < 0 || lengths.Value(g) < 0) return Corrupt("a negative extent");
    ColumnGroup group{
        {}, static_cast<uint64_t>(offsets.Value(g)), static_cast<uint64_t>(lengths.Value(g)), {}};
    for (int64_t c = group_columns.value_offset(g); c < group_columns.value_offset(g + 1); ++c) {
      group.columns.push_back(names.GetString(c));
    }
    design.column_groups.push_back(std::move(group));
  }

  const auto& keys = Column<arrow::ListArray>(batch, "sort_by");
  const auto& key_values = static_cast<const arrow::StructArray&>(*keys.values());
  const auto& key_columns = static_cast<const arrow::StringArray&>(*key_values.field(0));
  const auto& descending = static_cast<const arrow::BooleanArray&>(*key_values.field(1));
  for (int64_t k = keys.value_offset(0); k < keys.value_offset(1); ++k) {
    design.sort_by.push_back({key_columns.GetString(k), descending.Value(k)});
  }
  return design;
}

}  // namespace

std::string_view FormatName(ObjectFormat format) {
  switch (format) {
    case ObjectFormat::kRows:
      return "rows";
    case ObjectFormat::kIpc:
      return "ipc";
    case ObjectFormat::kParquet:
      return "parquet";
  }
  return "unknown";
}

arrow::Result<ObjectFormat> ParseFormat(std::string_view name) {
  if (name == "rows") return ObjectFormat::kRows;
  if (name == "ipc") return ObjectFormat::kIpc;
  if (name == "parquet") return ObjectFormat::kParquet;
  return Error(ErrorCode::kInvalidRequest, "unknown format '", std::string(name),
               "'; expected rows, ipc or parquet");
}

bool ObjectDesign::monolithic() const { return column_groups.size() == 1; }

namespace {

arrow::Result<std::shared_ptr<arrow::Buffer>> StreamBytes(const arrow::RecordBatch& batch) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeStreamWriter(sink, batch.schema()));
  ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(batch));
  ARROW_RETURN_NOT_OK(writer->Close());
  return sink->Finish();
}

bool Checksummed(const ObjectDesign& design) {
  return !design.column_groups.empty() && design.column_groups[0].checksums.has_value();
}

arrow::Result<std::shared_ptr<arrow::Array>> ChecksumsArray(const ObjectDesign& design) {
  ARROW_ASSIGN_OR_RAISE(auto builder, arrow::MakeBuilder(ChecksumsType()));
  auto* groups = static_cast<arrow::ListBuilder*>(builder.get());
  auto* group = static_cast<arrow::StructBuilder*>(groups->value_builder());
  auto* chunk_bytes = static_cast<arrow::Int64Builder*>(group->field_builder(0));
  auto* table_offset = static_cast<arrow::Int64Builder*>(group->field_builder(1));
  auto* tail_crc = static_cast<arrow::UInt32Builder*>(group->field_builder(2));
  ARROW_RETURN_NOT_OK(groups->Append());
  for (const auto& column_group : design.column_groups) {
    if (!column_group.checksums) return arrow::Status::Invalid("checksums of some groups only");
    const ExtentChecksums& checksums = *column_group.checksums;
    ARROW_RETURN_NOT_OK(group->Append());
    ARROW_RETURN_NOT_OK(chunk_bytes->Append(checksums.chunk_bytes));
    ARROW_RETURN_NOT_OK(table_offset->Append(static_cast<int64_t>(checksums.table_offset)));
    ARROW_RETURN_NOT_OK(tail_crc->Append(checksums.tail_crc));
  }
  return builder->Finish();
}

// The attribute's row without its own checksum: what that checksum covers.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> DesignBatch(const ObjectDesign& design) {
  auto schema = DesignSchema();
  std::unique_ptr<arrow::RecordBatchBuilder> builder;
  ARROW_ASSIGN_OR_RAISE(builder,
                        arrow::RecordBatchBuilder::Make(schema, arrow::default_memory_pool()));
  ARROW_RETURN_NOT_OK(builder->GetFieldAs<arrow::Int32Builder>(0)->Append(kDesignVersion));
  ARROW_RETURN_NOT_OK(
      builder->GetFieldAs<arrow::StringBuilder>(1)->Append(std::string(FormatName(design.format))));

  auto* groups = builder->GetFieldAs<arrow::ListBuilder>(2);
  auto* group = static_cast<arrow::StructBuilder*>(groups->value_builder());
  auto* columns = static_cast<arrow::ListBuilder*>(group->field_builder(0));
  auto* names = static_cast<arrow::StringBuilder*>(columns->value_builder());
  auto* offsets = static_cast<arrow::Int64Builder*>(group->field_builder(1));
  auto* lengths = static_cast<arrow::Int64Builder*>(group->field_builder(2));
  ARROW_RETURN_NOT_OK(groups->Append());
  for (const auto& column_group : design.column_groups) {
    ARROW_RETURN_NOT_OK(group->Append());
    ARROW_RETURN_NOT_OK(columns->Append());
    for (const auto& name : column_group.columns) ARROW_RETURN_NOT_OK(names->Append(name));
    ARROW_RETURN_NOT_OK(offsets->Append(static_cast<int64_t>(column_group.offset)));
    ARROW_RETURN_NOT_OK(lengths->Append(static_cast<int64_t>(column_group.length)));
  }

  auto* keys = builder->GetFieldAs<arrow::ListBuilder>(3);
  auto* key = static_cast<arrow::StructBuilder*>(keys->value_builder());
  auto* key_columns = static_cast<arrow::StringBuilder*>(key->field_builder(0));
  auto* descending = static_cast<arrow::BooleanBuilder*>(key->field_builder(1));
  ARROW_RETURN_NOT_OK(keys->Append());
  for (const auto& sort_key : design.sort_by) {
    ARROW_RETURN_NOT_OK(key->Append());
    ARROW_RETURN_NOT_OK(key_columns->Append(sort_key.column));
    ARROW_RETURN_NOT_OK(descending->Append(sort_key.descending));
  }

  ARROW_RETURN_NOT_OK(builder->GetFieldAs<arrow::StringBuilder>(4)->Append(design.compression));
  ARROW_RETURN_NOT_OK(builder->GetFieldAs<arrow::Int64Builder>(5)->Append(design.row_group_size));
  ARROW_RETURN_NOT_OK(builder->GetFieldAs<arrow::Int64Builder>(6)->Append(design.num_rows));
  ARROW_RETURN_NOT_OK(builder->GetFieldAs<arrow::Int64Builder>(7)->Append(design.generation));
  ARROW_ASSIGN_OR_RAISE(auto batch, builder->Flush());
  if (!Checksummed(design)) return batch;
  ARROW_ASSIGN_OR_RAISE(auto checksums, ChecksumsArray(design));
  return batch->AddColumn(batch->num_columns(),
                          arrow::field(kChecksumsField, checksums->type(), false), checksums);
}

arrow::Result<uint32_t> SelfChecksum(const ObjectDesign& design) {
  ARROW_ASSIGN_OR_RAISE(auto batch, DesignBatch(design));
  ARROW_ASSIGN_OR_RAISE(auto bytes, StreamBytes(*batch));
  return Crc32c(bytes->data(), bytes->size());
}

// The checksums field of a parsed attribute, each group's checked against its extent.
arrow::Status AddChecksums(const arrow::Array& column, ObjectDesign* design) {
  if (!column.type()->Equals(ChecksumsType()) || column.null_count() > 0) {
    return Corrupt(std::string("field '") + kChecksumsField + "' is not " +
                   ChecksumsType()->ToString());
  }
  const auto& groups = static_cast<const arrow::ListArray&>(column);
  const auto& values = static_cast<const arrow::StructArray&>(*groups.values());
  for (const auto& field : values.fields()) {
    if (field->null_count() > 0 || values.null_count() > 0) {
      return Corrupt(std::string("field '") + kChecksumsField + "' holds nulls");
    }
  }
  const auto& chunk_bytes = static_cast<const arrow::Int64Array&>(*values.field(0));
  const auto& table_offset = static_cast<const arrow::Int64Array&>(*values.field(1));
  const auto& tail_crc = static_cast<const arrow::UInt32Array&>(*values.field(2));
  const int64_t first = groups.value_offset(0);
  if (groups.value_length(0) != static_cast<int64_t>(design->column_groups.size())) {
    return Corrupt("its checksums are not one per column group");
  }
  for (auto& group : design->column_groups) {
    const int64_t g = first + (&group - design->column_groups.data());
    ExtentChecksums checksums{chunk_bytes.Value(g), static_cast<uint64_t>(table_offset.Value(g)),
                              tail_crc.Value(g)};
    if (table_offset.Value(g) < 0 || !DescribesExtent(checksums, group.length)) {
      return Corrupt("the checksums of the extent at " + std::to_string(group.offset) +
                     " do not describe it");
    }
    group.checksums = checksums;
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Buffer>> SerializeDesign(const ObjectDesign& design) {
  ARROW_ASSIGN_OR_RAISE(auto batch, DesignBatch(design));
  if (Checksummed(design)) {
    ARROW_ASSIGN_OR_RAISE(auto bytes, StreamBytes(*batch));
    arrow::UInt32Builder self;
    ARROW_RETURN_NOT_OK(self.Append(Crc32c(bytes->data(), bytes->size())));
    ARROW_ASSIGN_OR_RAISE(auto checksum, self.Finish());
    ARROW_ASSIGN_OR_RAISE(
        batch,
        batch->AddColumn(batch->num_columns(),
                         arrow::field(kSelfChecksumField, arrow::uint32(), false), checksum));
  }
  return StreamBytes(*batch);
}

arrow::Result<ObjectDesign> ParseDesign(std::string_view encoded, uint64_t object_size) {
  if (encoded.size() > kMaxDesignBytes) return Corrupt("it is larger than 1 MiB");
  auto buffer = std::make_shared<arrow::Buffer>(reinterpret_cast<const uint8_t*>(encoded.data()),
                                                static_cast<int64_t>(encoded.size()));
  auto reader =
      arrow::ipc::RecordBatchStreamReader::Open(std::make_shared<arrow::io::BufferReader>(buffer));
  if (!reader.ok()) return Corrupt(reader.status().message());
  auto batch = (*reader)->Next();
  if (!batch.ok()) return Corrupt(batch.status().message());
  if (*batch == nullptr || (*batch)->num_rows() != 1) return Corrupt("it does not hold one row");
  auto valid = (*batch)->ValidateFull();
  if (!valid.ok()) return Corrupt(valid.message());
  // A newer writer may add fields; the ones this version reads must be as written.
  const auto& version = (*batch)->GetColumnByName("version");
  if (version == nullptr || !version->type()->Equals(arrow::int32())) {
    return Corrupt("it has no version");
  }
  int32_t version_number = static_cast<const arrow::Int32Array&>(*version).Value(0);
  if (version_number != kDesignVersion) {
    return Error(ErrorCode::kCorruptObject, "object has design version ", version_number,
                 "; this storage reads version ", kDesignVersion);
  }
  auto schema = DesignSchema();
  for (const auto& field : schema->fields()) {
    const auto& column = (*batch)->GetColumnByName(field->name());
    if (column == nullptr || !column->type()->Equals(field->type()) || column->null_count() > 0) {
      return Corrupt("field '" + field->name() + "' is missing or not " +
                     field->type()->ToString());
    }
    // Nested nulls would read as values: the whole attribute must be null-free.
    if (column->type()->num_fields() > 0) {
      const auto& list = static_cast<const arrow::ListArray&>(*column);
      const auto& values = static_cast<const arrow::StructArray&>(*list.values());
      for (const auto& child : values.fields()) {
        if (child->null_count() > 0 || values.null_count() > 0) {
          return Corrupt("field '" + field->name() + "' holds nulls");
        }
        if (child->type()->id() == arrow::Type::LIST &&
            static_cast<const arrow::ListArray&>(*child).values()->null_count() > 0) {
          return Corrupt("field '" + field->name() + "' holds nulls");
        }
      }
    }
  }
  auto design = FromBatch(**batch);
  if (!design.ok()) return Corrupt(design.status().message());
  if (auto problem = StructuralProblem(*design)) return Corrupt(*problem);
  if (!KnownCompression(design->compression) && design->compression != "unknown") {
    return Corrupt("unknown compression '" + design->compression + "'");
  }
  if (design->num_rows < 0) return Corrupt("a negative row count");
  std::vector<std::pair<uint64_t, uint64_t>> extents;
  for (const auto& group : design->column_groups) {
    if (group.length > object_size || group.offset > object_size - group.length) {
      return Corrupt("an extent ends past the object's " + std::to_string(object_size) + " bytes");
    }
    extents.emplace_back(group.offset, group.offset + group.length);
  }
  std::sort(extents.begin(), extents.end());
  for (size_t i = 1; i < extents.size(); ++i) {
    if (extents[i].first < extents[i - 1].second) return Corrupt("two extents overlap");
  }
  const auto& checksums = (*batch)->GetColumnByName(kChecksumsField);
  const auto& self = (*batch)->GetColumnByName(kSelfChecksumField);
  if ((checksums == nullptr) != (self == nullptr)) {
    return Corrupt("it has extent checksums or its own checksum, not both");
  }
  if (checksums == nullptr) return std::move(*design);
  ARROW_RETURN_NOT_OK(AddChecksums(*checksums, &*design));
  if (!self->type()->Equals(arrow::uint32()) || self->null_count() > 0) {
    return Corrupt("its checksum is not a uint32");
  }
  ARROW_ASSIGN_OR_RAISE(uint32_t expected, SelfChecksum(*design));
  if (static_cast<const arrow::UInt32Array&>(*self).Value(0) != expected) {
    return Corrupt("its checksum does not match (a damaged attribute)");
  }
  return std::move(*design);
}

arrow::Result<ObjectDesign> ReadDesign(ObjectContext* object) {
  ARROW_ASSIGN_OR_RAISE(auto encoded, object->GetXattr(kDesignAttribute));
  return DesignOf(object, encoded);
}

arrow::Result<ObjectDesign> DesignOf(ObjectContext* object,
                                     const std::optional<std::string>& encoded) {
  ARROW_ASSIGN_OR_RAISE(uint64_t size, object->Size());
  if (encoded) return ParseDesign(*encoded, size);
  ARROW_ASSIGN_OR_RAISE(auto format, object->GetXattr(kFormatAttribute));
  if (!format) {
    return Error(ErrorCode::kCorruptObject, "object has no ", kDesignAttribute,
                 " attribute: it was not written as a skyhook partition");
  }
  ObjectDesign design;
  auto parsed = ParseFormat(*format);
  if (!parsed.ok()) {
    return Error(ErrorCode::kCorruptObject, "object has unknown format '", *format, "'");
  }
  design.format = *parsed;
  design.column_groups = {ColumnGroup{{}, 0, size, {}}};
  design.compression = "unknown";
  design.num_rows = -1;  // only its footer knows
  return design;
}

arrow::Status CheckDesignRequest(const ObjectDesign& design) {
  if (auto problem = StructuralProblem(design)) {
    return Error(ErrorCode::kInvalidRequest, "impossible design: ", *problem);
  }
  if (!KnownCompression(design.compression)) {
    return Error(ErrorCode::kInvalidRequest, "unknown compression '", design.compression,
                 "'; expected none, lz4 or zstd");
  }
  return arrow::Status::OK();
}

}  // namespace skyhook
