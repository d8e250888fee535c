#include "skyhook/storage/object/row_encoder.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

#include <arrow/array.h>
#include <arrow/ipc/writer.h>
#include <arrow/util/byte_size.h>
#include <flatbuffers/flexbuffers.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/row_format_generated.h"
#include "skyhook/storage/object/row_value_types.h"

namespace skyhook {
namespace {

template <typename ArrayType>
const ArrayType& As(const arrow::Array& array) {
  return static_cast<const ArrayType&>(array);
}

// An integer or temporal column's physical value, widened to int64_t or uint64_t.
template <typename Wide>
Wide IntegerAt(const arrow::Array& array, int64_t i) {
  constexpr bool kSigned = std::is_signed_v<Wide>;
  const auto& data = *array.data();
  switch (array.type()->byte_width()) {
    case 1:
      return data.GetValues<std::conditional_t<kSigned, int8_t, uint8_t>>(1)[i];
    case 2:
      return data.GetValues<std::conditional_t<kSigned, int16_t, uint16_t>>(1)[i];
    case 4:
      return data.GetValues<std::conditional_t<kSigned, int32_t, uint32_t>>(1)[i];
    default:
      return data.GetValues<Wide>(1)[i];
  }
}

void AppendBlob(std::string_view bytes, flexbuffers::Builder* out) {
  out->Blob(bytes.data(), bytes.size());
}

template <typename ListArrayType>
void AppendList(const ListArrayType& list, int64_t i, flexbuffers::Builder* out);

// One value of an array whose type CheckRowValueType accepts, as
// row_value_types.h describes.
void AppendValue(const arrow::Array& array, int64_t i, flexbuffers::Builder* out) {
  if (array.IsNull(i)) {
    out->Null();
    return;
  }
  switch (array.type_id()) {
    case arrow::Type::BOOL:
      out->Bool(As<arrow::BooleanArray>(array).Value(i));
      return;
    case arrow::Type::UINT8:
    case arrow::Type::UINT16:
    case arrow::Type::UINT32:
    case arrow::Type::UINT64:
    case arrow::Type::HALF_FLOAT:
      out->UInt(IntegerAt<uint64_t>(array, i));
      return;
    case arrow::Type::FLOAT:
      out->Float(As<arrow::FloatArray>(array).Value(i));
      return;
    case arrow::Type::DOUBLE:
      out->Double(As<arrow::DoubleArray>(array).Value(i));
      return;
    case arrow::Type::STRING: {
      auto text = As<arrow::StringArray>(array).GetView(i);
      out->String(text.data(), text.size());
      return;
    }
    case arrow::Type::LARGE_STRING: {
      auto text = As<arrow::LargeStringArray>(array).GetView(i);
      out->String(text.data(), text.size());
      return;
    }
    case arrow::Type::STRING_VIEW: {
      auto text = As<arrow::StringViewArray>(array).GetView(i);
      out->String(text.data(), text.size());
      return;
    }
    case arrow::Type::BINARY:
      return AppendBlob(As<arrow::BinaryArray>(array).GetView(i), out);
    case arrow::Type::LARGE_BINARY:
      return AppendBlob(As<arrow::LargeBinaryArray>(array).GetView(i), out);
    case arrow::Type::BINARY_VIEW:
      return AppendBlob(As<arrow::BinaryViewArray>(array).GetView(i), out);
    case arrow::Type::FIXED_SIZE_BINARY:
    case arrow::Type::DECIMAL32:
    case arrow::Type::DECIMAL64:
    case arrow::Type::DECIMAL128:
    case arrow::Type::DECIMAL256:
      return AppendBlob(As<arrow::FixedSizeBinaryArray>(array).GetView(i), out);
    case arrow::Type::LIST:
      return AppendList(As<arrow::ListArray>(array), i, out);
    case arrow::Type::LARGE_LIST:
      return AppendList(As<arrow::LargeListArray>(array), i, out);
    case arrow::Type::FIXED_SIZE_LIST:
      return AppendList(As<arrow::FixedSizeListArray>(array), i, out);
    case arrow::Type::STRUCT: {
      const auto& fields = As<arrow::StructArray>(array);
      const auto start = out->StartVector();
      for (int f = 0; f < fields.num_fields(); ++f) AppendValue(*fields.field(f), i, out);
      out->EndVector(start, false, false);
      return;
    }
    case arrow::Type::DICTIONARY: {
      const auto& dictionary = As<arrow::DictionaryArray>(array);
      AppendValue(*dictionary.dictionary(), dictionary.GetValueIndex(i), out);
      return;
    }
    default:  // the signed integers and temporal types
      out->Int(IntegerAt<int64_t>(array, i));
      return;
  }
}

template <typename ListArrayType>
void AppendList(const ListArrayType& list, int64_t i, flexbuffers::Builder* out) {
  const auto start = out->StartVector();
  const auto& values = *list.values();
  const int64_t first = list.value_offset(i);
  for (int64_t j = first; j < first + list.value_length(i); ++j) AppendValue(values, j, out);
  out->EndVector(start, false, false);
}

arrow::Status CheckColumns(const arrow::Schema& schema) {
  for (const auto& field : schema.fields()) {
    auto supported = CheckRowValueType(*field->type());
    if (supported.ok()) continue;
    const auto inside = supported.message().find(field->type()->ToString()) == std::string::npos
                            ? " (in " + field->type()->ToString() + ")"
                            : "";
    return Error(ErrorCode::kInvalidRequest, "column '", field->name(), "': ", supported.message(),
                 inside);
  }
  return arrow::Status::OK();
}

// Builds the object bottom-up: rows into blocks, blocks into the root.
class RowObjectBuilder {
 public:
  // Sized for the table up front: growing by doubling would copy the object
  // about twice over and fault in every page again.
  explicit RowObjectBuilder(const arrow::Table& table)
      : object_(std::min<size_t>(EstimatedSize(table), FLATBUFFERS_MAX_BUFFER_SIZE / 2)) {}

  arrow::Status Add(const arrow::RecordBatch& batch) {
    for (int64_t i = 0; i < batch.num_rows(); ++i) {
      row_.Clear();
      const auto start = row_.StartVector();
      for (const auto& column : batch.columns()) AppendValue(*column, i, &row_);
      row_.EndVector(start, false, false);
      row_.Finish();
      const auto& bytes = row_.GetBuffer();
      if (object_.GetSize() + bytes.size() + kHeadroom > FLATBUFFERS_MAX_BUFFER_SIZE) {
        return TooLarge();
      }
      // Aligned as FlexBuffers' widest scalar, so that its reads are aligned.
      object_.ForceVectorAlignment(bytes.size(), 1, 8);
      block_.push_back(rows::CreateRow(object_, object_.CreateVector(bytes)));
      if (static_cast<int64_t>(block_.size()) == kRowsPerBlock) EndBlock();
    }
    return arrow::Status::OK();
  }

  arrow::Result<std::shared_ptr<arrow::Buffer>> Finish(const arrow::Schema& schema,
                                                       arrow::MemoryPool* pool) {
    if (!block_.empty()) EndBlock();
    ARROW_ASSIGN_OR_RAISE(auto serialized, arrow::ipc::SerializeSchema(schema, pool));
    if (object_.GetSize() + serialized->size() + kHeadroom > FLATBUFFERS_MAX_BUFFER_SIZE) {
      return TooLarge();
    }
    auto root = rows::CreateRowObject(object_, kRowFormatVersion,
                                      object_.CreateVector(serialized->data(), serialized->size()),
                                      rows_, object_.CreateVector(blocks_));
    rows::FinishRowObjectBuffer(object_, root);
    ARROW_ASSIGN_OR_RAISE(auto out, arrow::AllocateBuffer(object_.GetSize(), pool));
    std::memcpy(out->mutable_data(), object_.GetBufferPointer(), object_.GetSize());
    return std::shared_ptr<arrow::Buffer>(std::move(out));
  }

 private:
  // The Arrow bytes plus FlexBuffers' type bytes and FlatBuffers' per-row table.
  static size_t EstimatedSize(const arrow::Table& table) {
    const int64_t per_row = table.num_columns() + 24;
    return static_cast<size_t>(arrow::util::TotalBufferSize(table) + table.num_rows() * per_row) +
           1024;
  }

  static arrow::Status TooLarge() {
    return Error(ErrorCode::kInvalidRequest,
                 "the rows exceed the 2 GiB a row object can hold: write smaller partitions");
  }

  // Room for the blocks' and root's tables and the schema past the last row.
  static constexpr size_t kHeadroom = 16 << 20;

  void EndBlock() {
    blocks_.push_back(rows::CreateRowBlock(object_, rows_, object_.CreateVector(block_)));
    rows_ += static_cast<int64_t>(block_.size());
    block_.clear();
  }

  flexbuffers::Builder row_;
  flatbuffers::FlatBufferBuilder object_;
  std::vector<flatbuffers::Offset<rows::Row>> block_;
  std::vector<flatbuffers::Offset<rows::RowBlock>> blocks_;
  int64_t rows_ = 0;
};

}  // namespace

arrow::Result<std::shared_ptr<arrow::Buffer>> EncodeRows(const arrow::Table& table,
                                                         arrow::MemoryPool* pool) {
  ARROW_RETURN_NOT_OK(CheckColumns(*table.schema()));
  RowObjectBuilder builder(table);
  arrow::TableBatchReader batches(table);
  std::shared_ptr<arrow::RecordBatch> batch;
  while (true) {
    ARROW_RETURN_NOT_OK(batches.ReadNext(&batch));
    if (batch == nullptr) break;
    ARROW_RETURN_NOT_OK(builder.Add(*batch));
  }
  return builder.Finish(*table.schema(), pool);
}

}  // namespace skyhook
