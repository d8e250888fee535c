#include "skyhook/storage/object/physical_prefilter.h"

#include <algorithm>
#include <exception>
#include <map>
#include <string>

#include <arrow/array/array_primitive.h>
#include <arrow/array/util.h>
#include <arrow/compute/api_vector.h>
#include <arrow/util/bit_util.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/column_reader.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/schema.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/dictionary_columns.h"
#include "skyhook/storage/object/dictionary_indices.h"

namespace skyhook {
namespace {

// Past this many rows a row group is read plainly: the selection holds a
// zone's values whole (8 bytes a row of each column it decodes), where
// Arrow's path holds 64 Ki rows at a time (designs default to 64 Ki a group).
constexpr int64_t kMaxRows = int64_t{1} << 20;

arrow::Status Corrupt(const std::string& cause) {
  return Error(ErrorCode::kCorruptObject, "object is not a readable Parquet partition: ", cause);
}

// Whether Arrow's reader turns the column's physical integers into values of
// `type` one for one (a narrowing cast for int8/int16, as Arrow's does).
bool IntegerStored(const parquet::ColumnDescriptor& column, const arrow::DataType& type) {
  if (column.max_repetition_level() != 0 || column.max_definition_level() > 1) return false;
  const auto& logical = *column.logical_type();
  const bool int32 = column.physical_type() == parquet::Type::INT32;
  const bool int64 = column.physical_type() == parquet::Type::INT64;
  auto is_int = [&](int bits) {
    const auto& as_int = static_cast<const parquet::IntLogicalType&>(logical);
    return logical.is_int() && as_int.bit_width() == bits && as_int.is_signed();
  };
  switch (type.id()) {
    case arrow::Type::INT8:
      return int32 && is_int(8);
    case arrow::Type::INT16:
      return int32 && is_int(16);
    case arrow::Type::INT32:
      return int32 && (logical.is_none() || is_int(32));
    case arrow::Type::INT64:
      return int64 && (logical.is_none() || is_int(64));
    case arrow::Type::DATE32:
      return int32 && logical.is_date();
    case arrow::Type::TIMESTAMP: {
      if (!int64 || !logical.is_timestamp()) return false;
      const auto unit = static_cast<const parquet::TimestampLogicalType&>(logical).time_unit();
      const auto arrow_unit = static_cast<const arrow::TimestampType&>(type).unit();
      return (unit == parquet::LogicalType::TimeUnit::MILLIS &&
              arrow_unit == arrow::TimeUnit::MILLI) ||
             (unit == parquet::LogicalType::TimeUnit::MICROS &&
              arrow_unit == arrow::TimeUnit::MICRO) ||
             (unit == parquet::LogicalType::TimeUnit::NANOS && arrow_unit == arrow::TimeUnit::NANO);
    }
    case arrow::Type::DECIMAL128: {
      if (!(int32 || int64) || !logical.is_decimal()) return false;
      const auto& stored = static_cast<const parquet::DecimalLogicalType&>(logical);
      const auto& decimal = static_cast<const arrow::Decimal128Type&>(type);
      return stored.precision() == decimal.precision() && stored.scale() == decimal.scale() &&
             decimal.precision() <= 18;
    }
    default:
      return false;
  }
}

// One column of a row group as Arrow sees it, widened to int64: a value per
// row, or, for a dictionary-encoded chunk, an index per row into its values.
struct DecodedColumn {
  std::shared_ptr<arrow::Buffer> values;   // int64 per row (0 where null); null: indices
  std::shared_ptr<arrow::Buffer> valid;    // uint8 per row; null: no nulls possible
  std::shared_ptr<arrow::Buffer> indices;  // int32 per row (a null: dictionary_length)
  // The chunk's dictionary as stored (INT32 or INT64 values), held by its reader.
  std::shared_ptr<parquet::ColumnReader> reader;
  const void* dictionary = nullptr;
  bool int32_dictionary = false;
  int64_t dictionary_length = -1;  // -1: not read yet

  int64_t DictionaryValue(int32_t index) const {
    return int32_dictionary ? static_cast<const int32_t*>(dictionary)[index]
                            : static_cast<const int64_t*>(dictionary)[index];
  }
};

// A field's column in one row group, decoded in order, part by part.
struct FieldColumn {
  std::shared_ptr<parquet::ColumnReader> reader;
  const parquet::ColumnDescriptor* descriptor = nullptr;
  std::shared_ptr<arrow::DataType> type;
  DecodedColumn decoded;  // room for every row of the row group
  int64_t rows = 0;       // of the row group
  int64_t rows_decoded = 0;
};

// Values as Arrow's reader makes them of `type`: int8/int16 narrowed;
// decimals beyond their precision are corrupt, as on Arrow's path
// (object_reader.cc). Null rows hold 0, which fits any precision.
arrow::Status Normalize(const arrow::DataType& type, int64_t* values, int64_t count) {
  if (type.id() == arrow::Type::INT8 || type.id() == arrow::Type::INT16) {
    const bool int8 = type.id() == arrow::Type::INT8;
    for (int64_t i = 0; i < count; ++i) {
      values[i] = int8 ? static_cast<int8_t>(values[i]) : static_cast<int16_t>(values[i]);
    }
  } else if (type.id() == arrow::Type::DECIMAL128) {
    int64_t limit = 1;  // 10^precision
    for (int d = 0; d < static_cast<const arrow::Decimal128Type&>(type).precision(); ++d) {
      limit *= 10;
    }
    bool fits = true;
    for (int64_t i = 0; i < count; ++i) {
      fits &= (values[i] > -limit) & (values[i] < limit);
    }
    if (!fits) return Corrupt("a decimal exceeds its precision");
  }
  return arrow::Status::OK();
}

// Holds on to the chunk's dictionary (handed out with every batch; its reader
// owns it), once: a chunk has one. A projection column's values are widened
// only where used (Gather); a filter column's whole dictionary once (Keep).
template <typename Physical>
arrow::Status TakeDictionary(FieldColumn* column, const Physical* values, int32_t length) {
  auto& decoded = column->decoded;
  if (decoded.dictionary_length >= 0) {
    if (length == decoded.dictionary_length && values == decoded.dictionary) {
      return arrow::Status::OK();
    }
    return Corrupt("a column chunk with two dictionaries");
  }
  if (length < 0 || (length > 0 && values == nullptr)) {
    return Corrupt("a dictionary without values");
  }
  // A chunk's dictionary holds values of its rows; a longer one is crafted,
  // and would size Keep's widened copy, which is not the call's memory.
  if (length > column->rows) {
    return Corrupt("a dictionary of more values than its row group has rows, in column " +
                   column->descriptor->name());
  }
  decoded.reader = column->reader;
  decoded.dictionary = values;
  decoded.int32_dictionary = sizeof(Physical) == sizeof(int32_t);
  decoded.dictionary_length = length;
  return arrow::Status::OK();
}

// Rows [begin, end) of `column`, read on from where it stopped: values, or
// indices checked against the dictionary.
template <typename ParquetType>
arrow::Status Decode(FieldColumn* column, int64_t begin, int64_t end, arrow::MemoryPool* pool) {
  using Physical = typename ParquetType::c_type;
  auto* reader = static_cast<parquet::TypedColumnReader<ParquetType>*>(column->reader.get());
  auto& decoded = column->decoded;
  const bool by_index = decoded.indices != nullptr;
  const int16_t max_definition = column->descriptor->max_definition_level();
  const int64_t rows = end - begin;
  int64_t* values = by_index ? nullptr : decoded.values->mutable_data_as<int64_t>() + begin;
  int32_t* indices = by_index ? decoded.indices->mutable_data_as<int32_t>() + begin : nullptr;
  std::shared_ptr<arrow::Buffer> narrow;  // INT32 values before widening
  Physical* dense = reinterpret_cast<Physical*>(values);
  if constexpr (sizeof(Physical) != sizeof(int64_t)) {
    if (!by_index) {
      ARROW_ASSIGN_OR_RAISE(narrow, arrow::AllocateBuffer(rows * sizeof(Physical), pool));
      dense = narrow->mutable_data_as<Physical>();
    }
  }
  std::shared_ptr<arrow::Buffer> levels;
  int16_t* definitions = nullptr;
  if (max_definition > 0) {
    ARROW_ASSIGN_OR_RAISE(levels, arrow::AllocateBuffer(rows * sizeof(int16_t), pool));
    definitions = levels->mutable_data_as<int16_t>();
  }
  int64_t read = 0;
  int64_t present = 0;
  while (read < rows) {
    int64_t values_read = 0;
    int64_t got = 0;
    int16_t* batch_definitions = definitions ? definitions + read : nullptr;
    if (by_index) {
      const Physical* dictionary = nullptr;
      int32_t length = 0;
      got = reader->ReadBatchWithDictionary(rows - read, batch_definitions, nullptr,
                                            indices + present, &values_read, &dictionary, &length);
      if (got > 0) ARROW_RETURN_NOT_OK(TakeDictionary(column, dictionary, length));
    } else {
      got =
          reader->ReadBatch(rows - read, batch_definitions, nullptr, dense + present, &values_read);
    }
    if (got <= 0) break;
    read += got;
    present += values_read;
  }
  if (read < rows || present > rows) {
    return Corrupt("a column holds fewer values than its row group");
  }
  if (by_index && !IndicesBelow(indices, present, decoded.dictionary_length)) {
    return Corrupt("a dictionary index out of range in column " + column->descriptor->name());
  }
  auto* valid = definitions ? decoded.valid->mutable_data() + begin : nullptr;
  // No nulls: every row's value is in place (a row has one level, a value per top level).
  if (definitions == nullptr || present == rows) {
    if (valid) std::fill(valid, valid + rows, uint8_t{1});
    if constexpr (sizeof(Physical) != sizeof(int64_t)) {
      if (!by_index) {
        for (int64_t row = 0; row < rows; ++row) values[row] = dense[row];
      }
    }
    return arrow::Status::OK();
  }
  int64_t count = 0;
  for (int64_t row = 0; row < rows; ++row) {
    valid[row] = definitions[row] == max_definition;
    count += valid[row];
  }
  if (count != present) return Corrupt("a column's levels do not match its values");
  // Backwards, the dense values spread in place (a row is never before its value).
  if (by_index) {
    const auto null_index = static_cast<int32_t>(decoded.dictionary_length);
    for (int64_t row = rows - 1, next = present - 1; row >= 0; --row) {
      indices[row] = valid[row] ? indices[next--] : null_index;
    }
  } else {
    for (int64_t row = rows - 1, next = present - 1; row >= 0; --row) {
      values[row] = valid[row] ? static_cast<int64_t>(dense[next--]) : 0;
    }
  }
  return arrow::Status::OK();
}

// Up to how large (bytes stored) a chunk's dictionary is read as indices: for
// a filter's column, a range decided per dictionary value costs about what it
// costs per row once the dictionary is near a row group's length (l_extendedprice:
// ~5 bytes a row; Q6's columns well under one), so a large one is read as values.
// A column only gathered is never expanded whole: up to the row group's values.
int64_t MaxDictionaryBytes(bool filter, int64_t rows) {
  return filter ? rows : rows * int64_t{sizeof(int64_t)};
}

// The column of `field` in a row group of `rows` rows, nothing decoded yet;
// nullopt when it is not integer-stored. A chunk whose pages are all
// dictionary-encoded, with a dictionary of up to max_dictionary_bytes, is read as indices.
arrow::Result<std::optional<FieldColumn>> OpenField(parquet::arrow::FileReader* file,
                                                    parquet::RowGroupReader* row_group, int field,
                                                    int64_t rows, int64_t max_dictionary_bytes,
                                                    arrow::MemoryPool* pool) {
  const auto& fields = file->manifest().schema_fields;
  if (field < 0 || field >= static_cast<int>(fields.size()) || !fields[field].is_leaf()) {
    return std::nullopt;
  }
  FieldColumn column;
  column.rows = rows;
  const int leaf = fields[field].column_index;
  column.descriptor = file->parquet_reader()->metadata()->schema()->Column(leaf);
  column.type = fields[field].field->type();
  if (!IntegerStored(*column.descriptor, *column.type)) return std::nullopt;
  if (DictionaryEncodedThroughout(*row_group->metadata()->ColumnChunk(leaf),
                                  max_dictionary_bytes)) {
    // Parquet's reader checks the encodings again before it hands out indices.
    column.reader = row_group->ColumnWithExposeEncoding(leaf, parquet::ExposedEncoding::DICTIONARY);
  }
  if (column.reader &&
      column.reader->GetExposedEncoding() == parquet::ExposedEncoding::DICTIONARY) {
    ARROW_ASSIGN_OR_RAISE(column.decoded.indices,
                          arrow::AllocateBuffer(rows * sizeof(int32_t), pool));
  } else {
    if (!column.reader) column.reader = row_group->Column(leaf);
    ARROW_ASSIGN_OR_RAISE(column.decoded.values,
                          arrow::AllocateBuffer(rows * sizeof(int64_t), pool));
  }
  if (column.descriptor->max_definition_level() > 0) {
    ARROW_ASSIGN_OR_RAISE(column.decoded.valid, arrow::AllocateBuffer(rows, pool));
  }
  return column;
}

// Decodes `column` up to row `end`, as Arrow would see it.
arrow::Status DecodeUpTo(FieldColumn* column, int64_t end, arrow::MemoryPool* pool) {
  const int64_t begin = column->rows_decoded;
  if (end <= begin) return arrow::Status::OK();
  ARROW_RETURN_NOT_OK(column->descriptor->physical_type() == parquet::Type::INT32
                          ? Decode<parquet::Int32Type>(column, begin, end, pool)
                          : Decode<parquet::Int64Type>(column, begin, end, pool));
  column->rows_decoded = end;
  if (column->decoded.values == nullptr) return arrow::Status::OK();  // indices: Keep, Gather
  return Normalize(*column->type, column->decoded.values->mutable_data_as<int64_t>() + begin,
                   end - begin);
}

// Narrows `keep` to the first `rows` rows of `column` within `range`.
arrow::Status Keep(const FieldColumn& field, const PhysicalRange& range, int64_t rows,
                   uint8_t* keep) {
  const DecodedColumn& column = field.decoded;
  if (column.indices) {  // the range decided per dictionary value; nulls' index never kept
    std::vector<int64_t> values(static_cast<size_t>(column.dictionary_length));
    for (int32_t i = 0; i < column.dictionary_length; ++i) values[i] = column.DictionaryValue(i);
    ARROW_RETURN_NOT_OK(Normalize(*field.type, values.data(), column.dictionary_length));
    const auto table = KeepTable(values.data(), column.dictionary_length, range);
    KeepByIndex(column.indices->data_as<int32_t>(), rows, table.data(), keep);
    return arrow::Status::OK();
  }
  if (column.valid) {
    const auto* valid = column.valid->data();
    for (int64_t row = 0; row < rows; ++row) keep[row] &= valid[row];
  }
  KeepValues(column.values->data_as<int64_t>(), rows, range, keep);
  return arrow::Status::OK();
}

template <typename Out>
std::shared_ptr<arrow::Buffer> Narrowed(const int64_t* values, int64_t count,
                                        std::unique_ptr<arrow::Buffer> buffer) {
  auto* out = buffer->mutable_data_as<Out>();
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<Out>(values[i]);
  return buffer;
}

// The selected rows of a decoded column, as Arrow's reader builds them.
arrow::Result<std::shared_ptr<arrow::Array>> Gather(const DecodedColumn& column,
                                                    const std::shared_ptr<arrow::DataType>& type,
                                                    const std::vector<int64_t>& rows,
                                                    arrow::MemoryPool* pool) {
  const auto count = static_cast<int64_t>(rows.size());
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> picked_buffer,
                        arrow::AllocateBuffer(count * sizeof(int64_t), pool));
  auto* picked = picked_buffer->mutable_data_as<int64_t>();
  if (column.indices) {  // nulls' index is past the dictionary: a 0, as in `values`
    const auto* indices = column.indices->data_as<int32_t>();
    for (int64_t i = 0; i < count; ++i) {
      const int32_t index = indices[rows[i]];
      picked[i] = index < column.dictionary_length ? column.DictionaryValue(index) : 0;
    }
    ARROW_RETURN_NOT_OK(Normalize(*type, picked, count));
  } else {
    const auto* values = column.values->data_as<int64_t>();
    for (int64_t i = 0; i < count; ++i) picked[i] = values[rows[i]];
  }
  std::shared_ptr<arrow::Buffer> data;
  switch (type->id()) {
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::INT32:
    case arrow::Type::DATE32: {
      const int width = type->byte_width();
      ARROW_ASSIGN_OR_RAISE(auto buffer, arrow::AllocateBuffer(count * width, pool));
      data = width == 1   ? Narrowed<int8_t>(picked, count, std::move(buffer))
             : width == 2 ? Narrowed<int16_t>(picked, count, std::move(buffer))
                          : Narrowed<int32_t>(picked, count, std::move(buffer));
      break;
    }
    case arrow::Type::DECIMAL128: {
      ARROW_ASSIGN_OR_RAISE(auto buffer, arrow::AllocateBuffer(count * 16, pool));
      auto* words = buffer->mutable_data_as<int64_t>();
      for (int64_t i = 0; i < count; ++i) {
        words[2 * i] = picked[i];  // little-endian: low word first, then its sign
        words[2 * i + 1] = picked[i] >> 63;
      }
      data = std::move(buffer);
      break;
    }
    default:  // int64, timestamps
      data = std::move(picked_buffer);
  }
  std::shared_ptr<arrow::Buffer> bitmap;
  int64_t nulls = 0;
  if (column.valid) {
    ARROW_ASSIGN_OR_RAISE(bitmap, arrow::AllocateEmptyBitmap(count, pool));
    const auto* valid = column.valid->data();
    auto* bits = bitmap->mutable_data();
    for (int64_t i = 0; i < count; ++i) {
      if (valid[rows[i]]) {
        arrow::bit_util::SetBit(bits, i);
      } else {
        ++nulls;
      }
    }
    if (nulls == 0) bitmap.reset();
  }
  return arrow::MakeArray(arrow::ArrayData::Make(type, count, {bitmap, data}, nulls));
}

arrow::Result<std::optional<ZoneSelection>> Select(parquet::arrow::FileReader* file, int row_group,
                                                   const std::vector<PhysicalRange>& ranges,
                                                   const std::vector<int>& fields,
                                                   const arrow::Schema& fields_schema,
                                                   const SelectionLimits& limits,
                                                   const RowGroupFields& read_fields,
                                                   arrow::compute::ExecContext* context) {
  auto* pool = context->memory_pool();
  const int64_t rows = file->parquet_reader()->metadata()->RowGroup(row_group)->num_rows();
  if (rows <= 0 || rows > kMaxRows) return std::nullopt;
  auto reader = file->parquet_reader()->RowGroup(row_group);
  std::map<int, FieldColumn> filter_columns;  // by field
  // The column of a range's field, opened once; nullptr when not integer-stored.
  auto filter_column = [&](int field) -> arrow::Result<FieldColumn*> {
    auto found = filter_columns.find(field);
    if (found != filter_columns.end()) return &found->second;
    ARROW_ASSIGN_OR_RAISE(auto column, OpenField(file, reader.get(), field, rows,
                                                 MaxDictionaryBytes(true, rows), pool));
    if (!column) return nullptr;
    return &filter_columns.emplace(field, std::move(*column)).first->second;
  };
  if (limits.sample_rows > 0 && limits.sample_rows < rows) {
    // The first rows of one column decide (a page or so; the reader goes on
    // from there), rather than a whole column decoded for a filter keeping
    // most rows (Q1's date bound).
    ARROW_ASSIGN_OR_RAISE(auto* first, filter_column(ranges[0].field));
    if (first == nullptr) return std::nullopt;
    ARROW_RETURN_NOT_OK(DecodeUpTo(first, limits.sample_rows, pool));
    std::vector<uint8_t> keep(static_cast<size_t>(limits.sample_rows), 1);
    ARROW_RETURN_NOT_OK(Keep(*first, ranges[0], limits.sample_rows, keep.data()));
    int64_t kept = 0;
    for (uint8_t row : keep) kept += row;
    if (static_cast<double>(kept) > limits.max_share * static_cast<double>(limits.sample_rows)) {
      return std::nullopt;
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto keep_buffer, arrow::AllocateBuffer(rows, pool));
  auto* keep = keep_buffer->mutable_data();
  std::fill(keep, keep + rows, uint8_t{1});
  int64_t kept = rows;
  for (const auto& range : ranges) {
    ARROW_ASSIGN_OR_RAISE(auto* column, filter_column(range.field));
    if (column == nullptr) return std::nullopt;
    ARROW_RETURN_NOT_OK(DecodeUpTo(column, rows, pool));
    ARROW_RETURN_NOT_OK(Keep(*column, range, rows, keep));
    kept = 0;
    for (int64_t row = 0; row < rows; ++row) kept += keep[row];
    if (kept == 0) break;  // no other column needs decoding
  }
  if (static_cast<double>(kept) > limits.max_share * static_cast<double>(rows)) {
    return std::nullopt;
  }
  ZoneSelection selection;
  selection.rows.reserve(static_cast<size_t>(kept));
  for (int64_t row = 0; row < rows; ++row) {
    if (keep[row]) selection.rows.push_back(row);
  }
  if (kept == 0) {
    ARROW_ASSIGN_OR_RAISE(selection.batch, arrow::RecordBatch::MakeEmpty(
                                               std::make_shared<arrow::Schema>(fields_schema)));
    return selection;
  }
  arrow::ArrayVector columns(fields.size());
  std::vector<int> others;  // positions in `fields` read through Arrow
  const auto& schema_fields = file->manifest().schema_fields;
  for (size_t i = 0; i < fields.size(); ++i) {
    const int field = fields[i];
    const auto& type = fields_schema.field(static_cast<int>(i))->type();
    std::optional<DecodedColumn> column;
    if (field >= 0 && field < static_cast<int>(schema_fields.size()) &&
        schema_fields[field].field->type()->Equals(*type)) {
      auto found = filter_columns.find(field);
      if (found != filter_columns.end() && found->second.rows_decoded == rows) {
        column = found->second.decoded;
      } else if (found == filter_columns.end()) {
        ARROW_ASSIGN_OR_RAISE(auto opened, OpenField(file, reader.get(), field, rows,
                                                     MaxDictionaryBytes(false, rows), pool));
        if (opened) {
          ARROW_RETURN_NOT_OK(DecodeUpTo(&*opened, rows, pool));
          column = opened->decoded;
        }
      }
    }
    if (column) {
      ARROW_ASSIGN_OR_RAISE(columns[i], Gather(*column, type, selection.rows, pool));
    } else {
      others.push_back(static_cast<int>(i));
    }
  }
  if (!others.empty()) {
    std::vector<int> other_fields;
    for (int i : others) other_fields.push_back(fields[i]);
    ARROW_ASSIGN_OR_RAISE(auto whole, read_fields(other_fields));
    if (whole->num_rows() != rows) return Corrupt("a column holds fewer values than its row group");
    arrow::Int64Array indices(kept, arrow::Buffer::Wrap(selection.rows));
    ARROW_ASSIGN_OR_RAISE(
        auto taken,
        arrow::compute::Take(whole, indices, arrow::compute::TakeOptions::Defaults(), context));
    for (size_t j = 0; j < others.size(); ++j) {
      columns[others[j]] = taken.record_batch()->column(static_cast<int>(j));
    }
  }
  selection.batch = arrow::RecordBatch::Make(std::make_shared<arrow::Schema>(fields_schema), kept,
                                             std::move(columns));
  return selection;
}

}  // namespace

arrow::Result<std::optional<ZoneSelection>> SelectRowGroup(
    parquet::arrow::FileReader* file, int row_group, const std::vector<PhysicalRange>& ranges,
    const std::vector<int>& fields, const arrow::Schema& fields_schema,
    const SelectionLimits& limits, const RowGroupFields& read_fields,
    arrow::compute::ExecContext* context) {
  if (ranges.empty() || row_group < 0 || row_group >= file->num_row_groups()) return std::nullopt;
  try {  // Parquet's column readers throw on corrupt pages
    return Select(file, row_group, ranges, fields, fields_schema, limits, read_fields, context);
  } catch (const std::exception& error) {
    return Corrupt(error.what());
  }
}

}  // namespace skyhook
