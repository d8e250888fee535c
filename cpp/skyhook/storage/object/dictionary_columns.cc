#include "skyhook/storage/object/dictionary_columns.h"

#include <algorithm>

#include <cstring>
#include <limits>

#include <arrow/buffer.h>
#include <arrow/record_batch.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/bitmap_ops.h>

namespace skyhook {
namespace {

// A dictionary page beyond this is no longer "a few distinct values": checking
// it per row group would cost more than checking the rows.
constexpr int64_t kMaxDictionaryPageBytes = 64 * 1024;

// Gathers a checked dictionary's values at the indices: Arrow's Take appends
// value by value through a builder (a tenth of Q1's storage CPU for one-byte
// keys); here offsets come first, then one copy per value. Indices are checked.
template <typename Index>
arrow::Result<std::shared_ptr<arrow::Array>> Gather(const arrow::BinaryArray& values,
                                                    const arrow::ArrayData& indices,
                                                    arrow::MemoryPool* pool) {
  const int64_t rows = indices.length;
  const Index* index = indices.GetValues<Index>(1);
  const uint8_t* valid = indices.GetValues<uint8_t>(0, 0);
  const int64_t dictionary_length = values.length();
  ARROW_ASSIGN_OR_RAISE(auto offsets_buffer,
                        arrow::AllocateBuffer((rows + 1) * sizeof(int32_t), pool));
  auto* offsets = reinterpret_cast<int32_t*>(offsets_buffer->mutable_data());
  int64_t total = 0;
  offsets[0] = 0;
  for (int64_t row = 0; row < rows; ++row) {
    const bool present = valid == nullptr || arrow::bit_util::GetBit(valid, indices.offset + row);
    if (present) {
      const int64_t at = index[row];
      if (at < 0 || at >= dictionary_length) {
        return arrow::Status::IndexError("dictionary index ", at, " out of bounds");
      }
      total += values.value_length(at);
      if (total > std::numeric_limits<int32_t>::max()) {
        return arrow::Status::CapacityError("gathered text over 2 GiB");
      }
    }
    offsets[row + 1] = static_cast<int32_t>(total);
  }
  ARROW_ASSIGN_OR_RAISE(auto data_buffer, arrow::AllocateBuffer(total, pool));
  uint8_t* data = data_buffer->mutable_data();
  for (int64_t row = 0; row < rows; ++row) {
    const int32_t length = offsets[row + 1] - offsets[row];
    if (length > 0) {
      std::memcpy(data + offsets[row], values.raw_data() + values.value_offset(index[row]), length);
    }
  }
  std::shared_ptr<arrow::Buffer> validity;
  const int64_t nulls = valid == nullptr ? 0 : indices.GetNullCount();
  if (nulls > 0) {
    ARROW_ASSIGN_OR_RAISE(validity, arrow::internal::CopyBitmap(pool, valid, indices.offset, rows));
  }
  return arrow::MakeArray(arrow::ArrayData::Make(
      values.type(), rows, {std::move(validity), std::move(offsets_buffer), std::move(data_buffer)},
      nulls));
}

arrow::Result<std::shared_ptr<arrow::Array>> Gather(const arrow::Array& dictionary,
                                                    const arrow::Array& indices,
                                                    arrow::MemoryPool* pool) {
  const auto& values = static_cast<const arrow::BinaryArray&>(dictionary);
  switch (indices.type_id()) {
    case arrow::Type::INT8:
      return Gather<int8_t>(values, *indices.data(), pool);
    case arrow::Type::INT16:
      return Gather<int16_t>(values, *indices.data(), pool);
    case arrow::Type::INT32:
      return Gather<int32_t>(values, *indices.data(), pool);
    case arrow::Type::INT64:
      return Gather<int64_t>(values, *indices.data(), pool);
    default:
      return arrow::Status::Invalid("dictionary indices of type ", indices.type()->ToString());
  }
}

}  // namespace

bool DictionaryEncodedThroughout(const parquet::ColumnChunkMetaData& chunk,
                                 int64_t max_dictionary_bytes) {
  if (!chunk.has_dictionary_page()) return false;
  int64_t dictionary_bytes = 0;  // offsets come from hostile metadata: no signed overflow
  if (__builtin_sub_overflow(chunk.data_page_offset(), chunk.dictionary_page_offset(),
                             &dictionary_bytes) ||
      dictionary_bytes <= 0 || dictionary_bytes > max_dictionary_bytes) {
    return false;
  }
  bool any_data_page = false;
  for (const auto& stats : chunk.encoding_stats()) {
    if (stats.page_type != parquet::PageType::DATA_PAGE &&
        stats.page_type != parquet::PageType::DATA_PAGE_V2) {
      continue;
    }
    if (stats.encoding != parquet::Encoding::RLE_DICTIONARY &&
        stats.encoding != parquet::Encoding::PLAIN_DICTIONARY) {
      return false;  // fell back to plain pages
    }
    any_data_page = true;
  }
  return any_data_page;
}

std::vector<int> SmallDictionaryLeaves(const parquet::FileMetaData& metadata,
                                       const parquet::arrow::SchemaManifest& manifest,
                                       const arrow::Schema& schema) {
  std::vector<int> leaves;
  const int fields = std::min<int>(schema.num_fields(), manifest.schema_fields.size());
  for (int field = 0; field < fields; ++field) {
    const auto& type_id = schema.field(field)->type()->id();
    const auto& schema_field = manifest.schema_fields[field];
    if ((type_id != arrow::Type::STRING && type_id != arrow::Type::BINARY) ||
        !schema_field.is_leaf()) {
      continue;
    }
    const int leaf = schema_field.column_index;
    if (leaf < 0 || leaf >= metadata.num_columns()) continue;
    bool small = metadata.num_row_groups() > 0;
    for (int group = 0; small && group < metadata.num_row_groups(); ++group) {
      small = DictionaryEncodedThroughout(*metadata.RowGroup(group)->ColumnChunk(leaf),
                                          kMaxDictionaryPageBytes);
    }
    if (small) leaves.push_back(leaf);
  }
  return leaves;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> PlainColumns::Convert(
    const std::shared_ptr<arrow::RecordBatch>& batch, const std::shared_ptr<arrow::Schema>& plain,
    arrow::compute::ExecContext* context, std::vector<bool>* converted) {
  converted->assign(batch->num_columns(), false);
  if (checked_.size() != static_cast<size_t>(batch->num_columns())) {
    checked_.assign(batch->num_columns(), nullptr);
  }
  arrow::ArrayVector columns = batch->columns();
  for (int i = 0; i < batch->num_columns(); ++i) {
    // A column stored as a dictionary stays one; only those read as one are gathered.
    if (columns[i]->type_id() != arrow::Type::DICTIONARY ||
        plain->field(i)->type()->id() == arrow::Type::DICTIONARY) {
      continue;
    }
    const auto& dictionary_array = static_cast<const arrow::DictionaryArray&>(*columns[i]);
    const auto& dictionary = columns[i]->data()->dictionary;
    if (dictionary == nullptr) return arrow::Status::Invalid("a dictionary column without values");
    if (checked_[i] != dictionary) {
      ARROW_RETURN_NOT_OK(arrow::MakeArray(dictionary)->ValidateFull());
      checked_[i] = dictionary;
    }
    const auto values = arrow::MakeArray(dictionary);
    // Parquet's dictionary pages hold no nulls; Gather would read one as "".
    if ((values->type_id() != arrow::Type::STRING && values->type_id() != arrow::Type::BINARY) ||
        values->null_count() > 0) {
      return arrow::Status::Invalid("a dictionary of ", values->type()->ToString(), " with ",
                                    values->null_count(), " nulls");
    }
    ARROW_ASSIGN_OR_RAISE(auto gathered,
                          Gather(*values, *dictionary_array.indices(), context->memory_pool()));
    columns[i] = std::move(gathered);
    (*converted)[i] = true;
  }
  if (std::find(converted->begin(), converted->end(), true) == converted->end()) return batch;
  return arrow::RecordBatch::Make(plain, batch->num_rows(), std::move(columns));
}

}  // namespace skyhook
