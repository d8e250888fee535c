#include "skyhook/storage/object/parquet_object_reader.h"

#include <algorithm>
#include <exception>
#include <optional>

#include <arrow/array.h>
#include <arrow/table.h>
#include <arrow/util/iterator.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/dictionary_columns.h"
#include "skyhook/storage/object/page_checksums.h"
#include "skyhook/storage/object/parsed_footers.h"

namespace skyhook {
namespace {

// Values Parquet's decoder copies as stored, unchecked: text (UTF-8) and
// decimals (their precision; a dictionary's values too).
bool DecodedUnchecked(const arrow::DataType& type) {
  if (type.id() == arrow::Type::STRING || type.id() == arrow::Type::LARGE_STRING ||
      type.id() == arrow::Type::STRING_VIEW || arrow::is_decimal(type.id())) {
    return true;
  }
  if (type.id() == arrow::Type::DICTIONARY) {
    return DecodedUnchecked(*static_cast<const arrow::DictionaryType&>(type).value_type());
  }
  for (const auto& child : type.fields()) {
    if (DecodedUnchecked(*child->type())) return true;
  }
  return false;
}

// Whether each of rows decimal128 values (two little-endian words, the low
// first) lies strictly between -limit and limit (0 < limit < 2^62). A clone
// per vector width: every decoded decimal passes here, 5x faster with AVX-512.
__attribute__((target_clones("avx512f", "avx2", "default"))) bool WordsWithin(const int64_t* words,
                                                                              int64_t rows,
                                                                              int64_t limit) {
  // -limit < low < limit  <=>  low + (limit - 1) lies in [0, 2 * limit - 2], unsigned.
  const uint64_t shift = static_cast<uint64_t>(limit) - 1;
  const uint64_t span = 2 * static_cast<uint64_t>(limit) - 2;
  uint64_t outside = 0;
  uint64_t beyond_64_bits = 0;
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t low = words[2 * row];
    const int64_t high = words[2 * row + 1];
    outside |= static_cast<uint64_t>(static_cast<uint64_t>(low) + shift > span);
    beyond_64_bits |= static_cast<uint64_t>(high ^ (low >> 63));
  }
  return (outside | beyond_64_bits) == 0;
}

// Whether every value of a decimal128 column without nulls and of precision
// <= 18 lies within its precision: what ValidateFull checks, in one branch-free
// pass (its per-value check was a tenth of Q6's CPU). nullopt: not such a column.
std::optional<bool> SmallDecimalsFit(const arrow::Array& column) {
  const auto& type = *column.type();
  if (type.id() != arrow::Type::DECIMAL128 || column.null_count() != 0) return std::nullopt;
  const int precision = static_cast<const arrow::Decimal128Type&>(type).precision();
  if (precision > 18) return std::nullopt;
  int64_t limit = 1;  // 10^precision
  for (int digit = 0; digit < precision; ++digit) limit *= 10;
  const auto* words = column.data()->GetValues<int64_t>(1, 0) + 2 * column.offset();
  return WordsWithin(words, column.length(), limit);
}

// Text that is not UTF-8 or a decimal beyond its precision is a corrupt object,
// not something compute and the client should meet (IPC batches are validated
// whole when read). Columns gathered from checked dictionaries are skipped.
arrow::Status CheckDecoded(const arrow::RecordBatch& batch, const std::vector<bool>& checked) {
  for (int i = 0; i < batch.num_columns(); ++i) {
    const auto& column = batch.column(i);
    if (checked[i] || !DecodedUnchecked(*column->type())) continue;
    if (auto fits = SmallDecimalsFit(*column)) {
      if (*fits) continue;
      return Error(ErrorCode::kCorruptObject,
                   "object is not a readable Parquet partition: a decimal exceeds its precision");
    }
    auto valid = column->ValidateFull();
    if (!valid.ok()) return UnreadableFormat("Parquet", valid);
  }
  return arrow::Status::OK();
}

void CollectLeaves(const parquet::arrow::SchemaField& field, std::vector<int>* leaves) {
  if (field.is_leaf()) leaves->push_back(field.column_index);
  for (const auto& child : field.children) CollectLeaves(child, leaves);
}

// Batches of one row group at a time: a slice never spans row groups, so the
// work and memory of a slice are bounded by the row group size.
class RowGroupReader : public arrow::RecordBatchReader {
 public:
  /// Reads the given row groups, skipping the first rows_to_skip rows.
  /// Columns of `kept` stay dictionaries, their indices unchecked (KeepDictionaries).
  RowGroupReader(parquet::arrow::FileReader* file, const ObjectFile* object_file,
                 std::vector<int> leaves, std::shared_ptr<arrow::Schema> schema,
                 std::vector<bool> kept, std::vector<int> row_groups, int64_t rows_to_skip,
                 arrow::MemoryPool* pool)
      : file_(file),
        object_file_(object_file),
        leaves_(std::move(leaves)),
        schema_(std::move(schema)),
        kept_(std::move(kept)),
        row_groups_(std::move(row_groups)),
        rows_to_skip_(rows_to_skip),
        context_(pool) {}

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }

  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* out) override {
    while (true) {
      if (current_) {
        auto status = current_->ReadNext(out);
        if (!status.ok()) return UnreadableFormat("Parquet", status, object_file_);
        if (*out != nullptr) {
          if (rows_to_skip_ >= (*out)->num_rows()) {
            rows_to_skip_ -= (*out)->num_rows();
            continue;
          }
          *out = (*out)->Slice(rows_to_skip_);
          rows_to_skip_ = 0;
          std::vector<bool> checked;
          auto plain = plain_.Convert(*out, schema_, &context_, &checked);
          if (!plain.ok()) return UnreadableFormat("Parquet", plain.status());
          *out = std::move(*plain);
          for (size_t i = 0; i < kept_.size(); ++i) checked[i] = checked[i] || kept_[i];
          return CheckDecoded(**out, checked);
        }
        current_.reset();
      }
      if (next_ >= row_groups_.size()) {
        *out = nullptr;
        return arrow::Status::OK();
      }
      auto batches = file_->GetRecordBatchReader({row_groups_[next_++]}, leaves_);
      if (!batches.ok()) return UnreadableFormat("Parquet", batches.status(), object_file_);
      current_ = std::move(*batches);
    }
  }

 private:
  parquet::arrow::FileReader* file_;
  const ObjectFile* object_file_;  // the file under file_, which names what it found damaged
  std::vector<int> leaves_;
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<bool> kept_;
  std::vector<int> row_groups_;
  size_t next_ = 0;
  int64_t rows_to_skip_ = 0;
  std::unique_ptr<arrow::RecordBatchReader> current_;
  arrow::compute::ExecContext context_;
  PlainColumns plain_;
};

class ParquetObjectReader : public ObjectReader {
 public:
  static arrow::Result<std::unique_ptr<ObjectReader>> Open(std::shared_ptr<ObjectFile> file,
                                                           arrow::MemoryPool* pool) {
    ARROW_ASSIGN_OR_RAISE(auto footer, ReadParquetFooter(file.get()));
    ARROW_ASSIGN_OR_RAISE(auto parsed, ParsedFooters::Process()->Get(std::string_view(*footer)));
    parquet::ReaderProperties file_properties(pool);
    // A flipped bit: an error, not a wrong answer. Pages are verified under
    // Arrow, as the file reads column chunks (page_checksums.h), not by
    // Arrow's software CRC.
    file_properties.set_page_checksum_verification(false);
    // The extent's own checksums already check every byte (extent_checksums.h).
    if (!file->verifies_extent()) file->VerifyPages(parsed->checksums);
    parquet::arrow::FileReaderBuilder builder;
    auto opened = builder.Open(file, file_properties, parsed->metadata);
    if (!opened.ok()) return UnreadableFormat("Parquet", opened, file.get());
    auto reader = builder.memory_pool(pool)->properties(StorageReadProperties(*parsed))->Build();
    if (!reader.ok()) return UnreadableFormat("Parquet", reader.status(), file.get());
    return std::unique_ptr<ObjectReader>(
        new ParquetObjectReader(std::move(file), std::move(*reader), std::move(parsed), pool));
  }

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }
  int64_t num_rows() const override { return reader_->parquet_reader()->metadata()->num_rows(); }

  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ReadFields(
      const std::vector<int>& field_indices, int64_t batch_size, int64_t start_row) override {
    // Whole row groups before start_row are never read; the rest of it is
    // skipped in the first row group read.
    auto metadata = reader_->parquet_reader()->metadata();
    std::vector<int> row_groups;
    for (int group = 0; group < metadata->num_row_groups(); ++group) {
      int64_t rows = metadata->RowGroup(group)->num_rows();
      if (row_groups.empty() && rows <= start_row) {
        start_row -= rows;
      } else {
        row_groups.push_back(group);
      }
    }
    return Read(field_indices, batch_size, std::move(row_groups), start_row);
  }

  std::vector<int> KeepDictionaries(const std::vector<int>& fields) override {
    kept_.assign(schema_->num_fields(), false);
    std::vector<int> kept;
    for (int field : fields) {
      if (field < 0 || field >= schema_->num_fields() || kept_[field]) continue;
      // Decoded as a dictionary of the stored type (Build checked which).
      if (decoded_->field(field)->type()->id() == arrow::Type::DICTIONARY &&
          schema_->field(field)->type()->id() != arrow::Type::DICTIONARY) {
        kept_[field] = true;
        kept.push_back(field);
      }
    }
    return kept;
  }

  int num_zones() const override { return reader_->num_row_groups(); }

  std::vector<int64_t> known_zone_rows() const override {
    auto metadata = reader_->parquet_reader()->metadata();
    std::vector<int64_t> rows;
    for (int group = 0; group < metadata->num_row_groups(); ++group) {
      rows.push_back(metadata->RowGroup(group)->num_rows());
    }
    return rows;
  }

  std::vector<std::optional<ColumnBounds>> StatedBounds(int field) const override {
    if (field < 0 || field >= schema_->num_fields()) return {};
    return RowGroupBounds(*reader_, field, *schema_->field(field)->type());
  }

  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ReadExistingZones(
      const std::vector<int>& field_indices, int64_t batch_size, std::vector<int> zones) override {
    return Read(field_indices, batch_size, std::move(zones), 0);
  }

  std::optional<std::vector<std::pair<uint64_t, uint64_t>>> ZoneRanges(
      const std::vector<int>& field_indices, const std::vector<int>& zones) const override {
    const auto& fields = reader_->manifest().schema_fields;
    std::vector<int> leaves;
    for (int index : field_indices) {
      if (index < 0 || static_cast<size_t>(index) >= fields.size()) return std::nullopt;
      CollectLeaves(fields[static_cast<size_t>(index)], &leaves);
    }
    auto metadata = reader_->parquet_reader()->metadata();
    const auto size = static_cast<uint64_t>(file_->size());
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    try {
      for (int zone : zones) {
        if (zone < 0 || zone >= metadata->num_row_groups()) return std::nullopt;
        auto row_group = metadata->RowGroup(zone);
        for (int leaf : leaves) {
          // A chunk Arrow refuses to read is refused when read: nothing to fetch.
          const auto range = ColumnChunkRange(*row_group->ColumnChunk(leaf));
          if (!range) continue;
          const auto start = static_cast<uint64_t>(range->first);
          const auto length = static_cast<uint64_t>(range->second);
          // Past the extent the read fails as it would in storage: nothing to fetch.
          if (start > size || length > size - start) continue;
          // Verified reads read whole chunks of the extent: fetch them.
          const auto [from, span] =
              file_->ReadSpan(static_cast<int64_t>(start), static_cast<int64_t>(length));
          ranges.emplace_back(file_->start() + static_cast<uint64_t>(from),
                              static_cast<uint64_t>(span));
        }
      }
    } catch (const std::exception&) {
      return std::nullopt;  // a footer parquet cannot read: the read says what is wrong
    }
    std::sort(ranges.begin(), ranges.end());
    return ranges;
  }

  bool SelectsZones() const override { return true; }

  arrow::Result<std::optional<ZoneSelection>> SelectZone(
      const std::vector<PhysicalRange>& ranges, const std::vector<int>& field_indices, int zone,
      const SelectionLimits& limits, arrow::compute::ExecContext* context) override {
    ARROW_ASSIGN_OR_RAISE(auto schema, HandedOutSchema(field_indices));
    auto read_whole =
        [&](const std::vector<int>& fields) -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> {
      ARROW_ASSIGN_OR_RAISE(auto batches, Read(fields, kZoneBatchRows, {zone}, 0));
      ARROW_ASSIGN_OR_RAISE(auto table, arrow::Table::FromRecordBatchReader(batches.get()));
      return table->CombineChunksToBatch(pool_);
    };
    auto selected = SelectRowGroup(reader_.get(), zone, ranges, field_indices, *schema, limits,
                                   read_whole, context);
    if (!selected.ok() && !file_->damage().ok()) return file_->damage();  // Parquet's text wraps it
    return selected;
  }

 private:
  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Read(
      const std::vector<int>& field_indices, int64_t batch_size, std::vector<int> row_groups,
      int64_t rows_to_skip) {
    reader_->set_batch_size(batch_size);
    std::vector<int> leaves;
    for (int index : field_indices) {
      CollectLeaves(reader_->manifest().schema_fields.at(index), &leaves);
    }
    ARROW_ASSIGN_OR_RAISE(auto schema, HandedOutSchema(field_indices));
    std::vector<bool> kept(field_indices.size(), false);
    for (size_t i = 0; i < field_indices.size(); ++i) kept[i] = Kept(field_indices[i]);
    return std::make_shared<RowGroupReader>(reader_.get(), file_.get(), std::move(leaves),
                                            std::move(schema), std::move(kept),
                                            std::move(row_groups), rows_to_skip, pool_);
  }

  bool Kept(int field) const {
    return field >= 0 && static_cast<size_t>(field) < kept_.size() && kept_[field];
  }

  // The fields as read: kept dictionaries as the reader decodes them.
  arrow::Result<std::shared_ptr<arrow::Schema>> HandedOutSchema(
      const std::vector<int>& field_indices) const {
    ARROW_ASSIGN_OR_RAISE(auto schema, FieldsSchema(field_indices));
    for (size_t i = 0; i < field_indices.size(); ++i) {
      if (!Kept(field_indices[i])) continue;
      ARROW_ASSIGN_OR_RAISE(
          schema, schema->SetField(static_cast<int>(i), decoded_->field(field_indices[i])));
    }
    return schema;
  }

  ParquetObjectReader(std::shared_ptr<ObjectFile> file,
                      std::unique_ptr<parquet::arrow::FileReader> reader,
                      std::shared_ptr<const ParsedFooter> footer, arrow::MemoryPool* pool)
      : ObjectReader(std::move(file)),
        reader_(std::move(reader)),
        footer_(std::move(footer)),
        schema_(footer_->schema),
        decoded_(footer_->decoded),
        pool_(pool) {}

  std::unique_ptr<parquet::arrow::FileReader> reader_;
  std::shared_ptr<const ParsedFooter> footer_;  // holds the metadata the reader reads by
  std::shared_ptr<arrow::Schema> schema_;       // as stored (dictionaries where stored so)
  std::shared_ptr<arrow::Schema> decoded_;      // as the reader decodes it
  std::vector<bool> kept_;  // per field: handed out as decoded (KeepDictionaries)
  arrow::MemoryPool* pool_;
};

}  // namespace

arrow::Result<std::unique_ptr<ObjectReader>> OpenParquetObject(std::shared_ptr<ObjectFile> file,
                                                               arrow::MemoryPool* pool) {
  return ParquetObjectReader::Open(std::move(file), pool);
}

}  // namespace skyhook
