#include "skyhook/storage/object/row_object_reader.h"

#include <algorithm>
#include <string>
#include <vector>

#include <arrow/builder.h>
#include <arrow/compute/api_vector.h>
#include <arrow/compute/cast.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/dictionary.h>
#include <arrow/ipc/reader.h>
#include <flatbuffers/flexbuffers.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/row_encoder.h"
#include "skyhook/storage/object/row_format_generated.h"
#include "skyhook/storage/object/row_value_decoder.h"
#include "skyhook/storage/object/row_value_types.h"

namespace skyhook {
namespace {

template <typename... Args>
arrow::Status Corrupt(Args&&... args) {
  return Error(ErrorCode::kCorruptObject,
               "object is not a readable row object: ", std::forward<Args>(args)...);
}

arrow::Result<std::shared_ptr<arrow::Schema>> ReadSchema(
    const std::shared_ptr<arrow::Buffer>& object, const flatbuffers::Vector<uint8_t>* bytes) {
  if (bytes == nullptr) return Corrupt("it has no schema");
  arrow::io::BufferReader stream(
      arrow::SliceBuffer(object, bytes->data() - object->data(), bytes->size()));
  arrow::ipc::DictionaryMemo dictionaries;
  auto schema = arrow::ipc::ReadSchema(&stream, &dictionaries);
  if (!schema.ok()) return Corrupt("its schema is unreadable: ", schema.status().message());
  for (const auto& field : (*schema)->fields()) {
    auto supported = CheckRowValueType(*field->type());
    if (!supported.ok()) return Corrupt("column '", field->name(), "': ", supported.message());
  }
  return schema;
}

// Blocks in order, each starting where the previous ended, adding up to num_rows:
// then a reader may trust first_row to find a row's block.
arrow::Status CheckBlocks(const rows::RowObject& root) {
  if (root.blocks() == nullptr) return Corrupt("it has no blocks");
  int64_t rows = 0;
  for (const auto* block : *root.blocks()) {
    if (block->rows() == nullptr || block->rows()->size() == 0) {
      return Corrupt("block at row ", rows, " has no rows");
    }
    if (block->first_row() != rows) {
      return Corrupt("a block starts at row ", block->first_row(), " where row ", rows, " is next");
    }
    rows += block->rows()->size();
  }
  if (rows != root.num_rows()) {
    return Corrupt("its blocks hold ", rows, " rows, its header says ", root.num_rows());
  }
  return arrow::Status::OK();
}

// The type a column is decoded as: a dictionary's values (encoded per batch).
std::shared_ptr<arrow::Field> DecodedField(const std::shared_ptr<arrow::Field>& field) {
  if (field->type()->id() != arrow::Type::DICTIONARY) return field;
  return field->WithType(static_cast<const arrow::DictionaryType&>(*field->type()).value_type());
}

// Decodes the rows of one block after another into batches of at most
// batch_size rows; a batch never spans blocks.
class RowBatchReader : public arrow::RecordBatchReader {
 public:
  RowBatchReader(std::shared_ptr<arrow::Buffer> bytes, std::shared_ptr<arrow::Schema> object_schema,
                 std::vector<int> field_indices, std::shared_ptr<arrow::Schema> schema,
                 int64_t batch_size, int64_t start_row, arrow::MemoryPool* pool)
      : bytes_(std::move(bytes)),
        root_(rows::GetRowObject(bytes_->data())),
        object_schema_(std::move(object_schema)),
        field_indices_(std::move(field_indices)),
        schema_(std::move(schema)),
        batch_size_(std::max<int64_t>(batch_size, 1)),
        pool_(pool) {
    const auto& blocks = *root_->blocks();
    start_row = std::max<int64_t>(start_row, 0);
    while (block_ < blocks.size() &&
           blocks[block_]->first_row() + blocks[block_]->rows()->size() <= start_row) {
      ++block_;
    }
    if (block_ < blocks.size()) row_ = start_row - blocks[block_]->first_row();
  }

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }

  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* out) override {
    const auto& blocks = *root_->blocks();
    if (block_ >= blocks.size()) {
      *out = nullptr;
      return arrow::Status::OK();
    }
    const auto& block = *blocks[block_];
    const int64_t length = std::min<int64_t>(batch_size_, block.rows()->size() - row_);
    ARROW_ASSIGN_OR_RAISE(auto columns, Decode(block, row_, length));
    *out = arrow::RecordBatch::Make(schema_, length, std::move(columns));
    auto valid = (*out)->ValidateFull();  // text that is not UTF-8, decimals beyond precision
    if (!valid.ok()) return Corrupt("block at row ", block.first_row(), ": ", valid.message());
    row_ += length;
    if (row_ == static_cast<int64_t>(block.rows()->size())) {
      ++block_;
      row_ = 0;
    }
    return arrow::Status::OK();
  }

 private:
  arrow::Result<arrow::ArrayVector> Decode(const rows::RowBlock& block, int64_t first,
                                           int64_t length) {
    std::vector<std::shared_ptr<arrow::Field>> fields;
    std::vector<std::unique_ptr<arrow::ArrayBuilder>> builders;
    for (int index : field_indices_) {
      fields.push_back(DecodedField(object_schema_->field(index)));
      ARROW_ASSIGN_OR_RAISE(builders.emplace_back(),
                            arrow::MakeBuilder(fields.back()->type(), pool_));
      ARROW_RETURN_NOT_OK(builders.back()->Reserve(length));
    }
    for (int64_t i = first; i < first + length && !fields.empty(); ++i) {
      const int64_t row = block.first_row() + i;
      ARROW_ASSIGN_OR_RAISE(auto values, RowValues(block.rows()->Get(i), row));
      for (size_t k = 0; k < fields.size(); ++k) {
        auto status = DecodeValue(values[field_indices_[k]], *fields[k], builders[k].get());
        if (CodeOf(status) == ErrorCode::kCorruptObject) {  // not a node limit, say
          return WithContext(status, "object is not a readable row object: row " +
                                         std::to_string(row) + ", column '" + fields[k]->name() +
                                         "'");
        }
        ARROW_RETURN_NOT_OK(status);
      }
    }
    arrow::ArrayVector columns;
    for (size_t k = 0; k < builders.size(); ++k) {
      ARROW_ASSIGN_OR_RAISE(auto column, builders[k]->Finish());
      ARROW_ASSIGN_OR_RAISE(columns.emplace_back(), AsStored(std::move(column), k));
    }
    return columns;
  }

  // The values of one row: a verified FlexBuffers vector with one value per column.
  arrow::Result<flexbuffers::Vector> RowValues(const rows::Row* row, int64_t number) {
    if (row == nullptr || row->values() == nullptr) return Corrupt("row ", number, " is missing");
    const auto* bytes = row->values();
    if (!flexbuffers::VerifyBuffer(bytes->data(), bytes->size())) {
      return Corrupt("row ", number, " is not a valid FlexBuffer");
    }
    auto root = flexbuffers::GetRoot(bytes->data(), bytes->size());
    if (root.GetType() != flexbuffers::FBT_VECTOR) {
      return Corrupt("row ", number, " is not a FlexBuffers vector");
    }
    auto values = root.AsVector();
    if (static_cast<int>(values.size()) != object_schema_->num_fields()) {
      return Corrupt("row ", number, " has ", values.size(), " values for ",
                     object_schema_->num_fields(), " columns");
    }
    return values;
  }

  // A dictionary column is decoded as its values and encoded again here.
  arrow::Result<std::shared_ptr<arrow::Array>> AsStored(std::shared_ptr<arrow::Array> column,
                                                        size_t k) {
    const auto& type = schema_->field(static_cast<int>(k))->type();
    if (type->id() != arrow::Type::DICTIONARY) return column;
    arrow::compute::ExecContext context(pool_);
    ARROW_ASSIGN_OR_RAISE(auto encoded,
                          arrow::compute::DictionaryEncode(
                              column, arrow::compute::DictionaryEncodeOptions(), &context));
    auto stored =
        arrow::compute::Cast(encoded, type, arrow::compute::CastOptions::Safe(), &context);
    if (!stored.ok()) {
      return Corrupt("column '", schema_->field(static_cast<int>(k))->name(),
                     "' has more values than its dictionary's index holds");
    }
    return stored->make_array();
  }

  std::shared_ptr<arrow::Buffer> bytes_;  // verified when the object was opened
  const rows::RowObject* root_;
  std::shared_ptr<arrow::Schema> object_schema_;
  std::vector<int> field_indices_;
  std::shared_ptr<arrow::Schema> schema_;
  int64_t batch_size_;
  arrow::MemoryPool* pool_;
  flatbuffers::uoffset_t block_ = 0;
  int64_t row_ = 0;  // within the block
};

class RowObjectReader : public ObjectReader {
 public:
  RowObjectReader(std::shared_ptr<ObjectFile> file, std::shared_ptr<arrow::Buffer> bytes,
                  std::shared_ptr<arrow::Schema> schema, arrow::MemoryPool* pool)
      : ObjectReader(std::move(file)),
        bytes_(std::move(bytes)),
        root_(rows::GetRowObject(bytes_->data())),
        schema_(std::move(schema)),
        pool_(pool) {}

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }
  int64_t num_rows() const override { return root_->num_rows(); }

  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ReadFields(
      const std::vector<int>& field_indices, int64_t batch_size, int64_t start_row) override {
    ARROW_ASSIGN_OR_RAISE(auto schema, FieldsSchema(field_indices));
    return std::make_shared<RowBatchReader>(bytes_, schema_, field_indices, std::move(schema),
                                            batch_size, start_row, pool_);
  }

 private:
  std::shared_ptr<arrow::Buffer> bytes_;
  const rows::RowObject* root_;
  std::shared_ptr<arrow::Schema> schema_;
  arrow::MemoryPool* pool_;
};

}  // namespace

arrow::Result<std::unique_ptr<ObjectReader>> OpenRowObject(std::shared_ptr<ObjectFile> file,
                                                           arrow::MemoryPool* pool) {
  ARROW_ASSIGN_OR_RAISE(const int64_t size, file->GetSize());
  if (size >= static_cast<int64_t>(FLATBUFFERS_MAX_BUFFER_SIZE)) {
    return Corrupt("it is larger than a FlatBuffer can be");
  }
  ARROW_ASSIGN_OR_RAISE(auto bytes, file->ReadAt(0, size));
  // Every table takes at least 4 bytes: the verifier's default limit of a
  // million tables would refuse objects of more than about a million rows.
  flatbuffers::Verifier::Options options;
  options.max_tables = static_cast<flatbuffers::uoffset_t>(size / 4 + 1);
  flatbuffers::Verifier verifier(bytes->data(), static_cast<size_t>(bytes->size()), options);
  if (!rows::VerifyRowObjectBuffer(verifier)) {
    return Corrupt("its FlatBuffers structure does not verify");
  }
  const auto* root = rows::GetRowObject(bytes->data());
  if (root->version() != kRowFormatVersion) {
    return Corrupt("version ", root->version(), " is not ", kRowFormatVersion);
  }
  ARROW_ASSIGN_OR_RAISE(auto schema, ReadSchema(bytes, root->schema()));
  ARROW_RETURN_NOT_OK(CheckBlocks(*root));
  return std::unique_ptr<ObjectReader>(
      new RowObjectReader(std::move(file), std::move(bytes), std::move(schema), pool));
}

}  // namespace skyhook
