#include "skyhook/storage/object/dictionary_codes.h"

#include <arrow/buffer.h>
#include <arrow/compute/api_vector.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/bitmap_ops.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/dictionary_indices.h"

namespace skyhook {
namespace {

// The codes of a column's rows from its indices and the map of its dictionary.
template <typename Index>
arrow::Result<std::shared_ptr<arrow::Array>> Transpose(const arrow::ArrayData& indices,
                                                       const std::vector<int32_t>& code_of,
                                                       arrow::MemoryPool* pool) {
  const int64_t rows = indices.length;
  const Index* index = indices.GetValues<Index>(1);
  const uint8_t* valid = indices.GetValues<uint8_t>(0, 0);
  const auto size = static_cast<uint64_t>(code_of.size());
  ARROW_ASSIGN_OR_RAISE(auto codes_buffer, arrow::AllocateBuffer(rows * sizeof(int32_t), pool));
  auto* codes = reinterpret_cast<int32_t*>(codes_buffer->mutable_data());
  if (valid == nullptr) {
    if (!IndicesBelow(index, rows, static_cast<int64_t>(size))) {
      return arrow::Status::IndexError("a dictionary index out of bounds");
    }
    for (int64_t row = 0; row < rows; ++row) codes[row] = code_of[index[row]];
  } else {
    for (int64_t row = 0; row < rows; ++row) {
      codes[row] = 0;
      if (!arrow::bit_util::GetBit(valid, indices.offset + row)) continue;
      const auto at = static_cast<uint64_t>(static_cast<int64_t>(index[row]));
      if (at >= size) return arrow::Status::IndexError("a dictionary index out of bounds");
      codes[row] = code_of[at];
    }
  }
  std::shared_ptr<arrow::Buffer> validity;
  const int64_t nulls = valid == nullptr ? 0 : indices.GetNullCount();
  if (nulls > 0) {
    ARROW_ASSIGN_OR_RAISE(validity, arrow::internal::CopyBitmap(pool, valid, indices.offset, rows));
  }
  return arrow::MakeArray(arrow::ArrayData::Make(
      arrow::int32(), rows, {std::move(validity), std::move(codes_buffer)}, nulls));
}

}  // namespace

DictionaryCodes::DictionaryCodes(std::shared_ptr<arrow::DataType> type, arrow::MemoryPool* pool,
                                 int32_t max_values, int64_t max_bytes)
    : type_(std::move(type)),
      pool_(pool),
      max_values_(max_values),
      max_bytes_(max_bytes),
      values_(pool) {}

arrow::Status DictionaryCodes::OverLimit() const {
  return Error(ErrorCode::kLimitExceeded, "a text column's dictionaries hold over ", max_values_,
               " values or ", max_bytes_, " bytes");
}

arrow::Status DictionaryCodes::Map(const std::shared_ptr<arrow::ArrayData>& dictionary) {
  if (dictionary == nullptr) return arrow::Status::Invalid("a dictionary column without values");
  const auto values = arrow::MakeArray(dictionary);
  // Parquet's dictionary pages hold no nulls.
  if (!values->type()->Equals(*type_) || values->null_count() > 0) {
    return arrow::Status::Invalid("a dictionary of ", values->type()->ToString(), " with ",
                                  values->null_count(), " nulls for ", type_->ToString());
  }
  ARROW_RETURN_NOT_OK(values->ValidateFull());
  const auto& text = static_cast<const arrow::BinaryArray&>(*values);
  if (text.length() > max_values_) return OverLimit();  // before code_of_ grows to it
  code_of_.resize(static_cast<size_t>(text.length()));
  for (int64_t i = 0; i < text.length(); ++i) {
    ARROW_RETURN_NOT_OK(values_.GetOrInsert(text.GetView(i), &code_of_[i]));
    if (values_.size() > max_values_ || values_.values_size() > max_bytes_) return OverLimit();
  }
  mapped_ = dictionary;
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::Array>> DictionaryCodes::Encode(const arrow::Array& column) {
  if (column.type_id() != arrow::Type::DICTIONARY) {
    return arrow::Status::Invalid("codes of a ", column.type()->ToString(), " column");
  }
  const auto& dictionary = column.data()->dictionary;
  if (mapped_ != dictionary) {
    mapped_.reset();  // a failed map leaves nothing half-built in use
    ARROW_RETURN_NOT_OK(Map(dictionary));
  }
  const auto& indices = *static_cast<const arrow::DictionaryArray&>(column).indices()->data();
  switch (indices.type->id()) {
    case arrow::Type::INT8:
      return Transpose<int8_t>(indices, code_of_, pool_);
    case arrow::Type::INT16:
      return Transpose<int16_t>(indices, code_of_, pool_);
    case arrow::Type::INT32:
      return Transpose<int32_t>(indices, code_of_, pool_);
    case arrow::Type::INT64:
      return Transpose<int64_t>(indices, code_of_, pool_);
    default:
      return arrow::Status::Invalid("dictionary indices of type ", indices.type->ToString());
  }
}

arrow::Result<std::shared_ptr<arrow::Array>> DictionaryCodes::Decode(
    const arrow::Array& codes, arrow::compute::ExecContext* context) const {
  const int32_t count = values_.size();
  ARROW_ASSIGN_OR_RAISE(auto offsets,
                        arrow::AllocateBuffer((int64_t{count} + 1) * sizeof(int32_t), pool_));
  values_.CopyOffsets(reinterpret_cast<int32_t*>(offsets->mutable_data()));
  ARROW_ASSIGN_OR_RAISE(auto data, arrow::AllocateBuffer(values_.values_size(), pool_));
  values_.CopyValues(data->mutable_data());
  const auto dictionary = arrow::MakeArray(
      arrow::ArrayData::Make(type_, count, {nullptr, std::move(offsets), std::move(data)}, 0));
  // Codes come from Encode through the plan's grouping: Take checks them anyway.
  return arrow::compute::Take(*dictionary, codes, arrow::compute::TakeOptions::Defaults(), context);
}

}  // namespace skyhook
