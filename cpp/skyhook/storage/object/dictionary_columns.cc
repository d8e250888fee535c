#include "skyhook/storage/object/dictionary_columns.h"

#include <algorithm>

#include <arrow/compute/api_vector.h>
#include <arrow/record_batch.h>

namespace skyhook {
namespace {

// A dictionary page beyond this is no longer "a few distinct values": checking
// it per row group would cost more than checking the rows.
constexpr int64_t kMaxDictionaryPageBytes = 64 * 1024;

bool DictionaryEncodedThroughout(const parquet::ColumnChunkMetaData& chunk) {
  if (!chunk.has_dictionary_page()) return false;
  int64_t dictionary_bytes = 0;  // offsets come from hostile metadata: no signed overflow
  if (__builtin_sub_overflow(chunk.data_page_offset(), chunk.dictionary_page_offset(),
                             &dictionary_bytes) ||
      dictionary_bytes <= 0 || dictionary_bytes > kMaxDictionaryPageBytes) {
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

}  // namespace

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
      small = DictionaryEncodedThroughout(*metadata.RowGroup(group)->ColumnChunk(leaf));
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
    // Take checks every index against the dictionary's length.
    ARROW_ASSIGN_OR_RAISE(
        auto gathered,
        arrow::compute::Take(*arrow::MakeArray(dictionary), *dictionary_array.indices(),
                             arrow::compute::TakeOptions::BoundsCheck(), context));
    columns[i] = std::move(gathered);
    (*converted)[i] = true;
  }
  if (std::find(converted->begin(), converted->end(), true) == converted->end()) return batch;
  return arrow::RecordBatch::Make(plain, batch->num_rows(), std::move(columns));
}

}  // namespace skyhook
