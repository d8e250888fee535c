#include "skyhook/storage/secondary/column_index.h"

#include <charconv>
#include <numeric>

#include <arrow/array/array_primitive.h>
#include <arrow/array/builder_primitive.h>
#include <arrow/array/concatenate.h>
#include <arrow/array/util.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/compute/api_vector.h>
#include <arrow/compute/cast.h>
#include <arrow/util/byte_size.h>
#include <arrow/util/key_value_metadata.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/secondary/omap_value.h"

namespace skyhook {
namespace {

constexpr char kIndexPrefix[] = "skyhook.index.v1.";
constexpr char kZoneRowsMetadata[] = "skyhook.zone_rows";

arrow::Status Corrupt(const std::string& key, const std::string& why) {
  return Error(ErrorCode::kCorruptObject, "the object's omap value ", key, " is corrupt: ", why);
}

std::string JoinZoneRows(const std::vector<int64_t>& zone_rows) {
  std::string text;
  for (int64_t rows : zone_rows) text += (text.empty() ? "" : ",") + std::to_string(rows);
  return text;
}

arrow::Result<std::vector<int64_t>> SplitZoneRows(const std::string& text, const std::string& key) {
  std::vector<int64_t> zone_rows;
  const char* at = text.data();
  const char* end = text.data() + text.size();
  while (at < end) {
    int64_t rows = 0;
    auto [next, error] = std::from_chars(at, end, rows);
    if (error != std::errc() || rows < 0) return Corrupt(key, "bad zone row counts");
    zone_rows.push_back(rows);
    at = next;
    if (at < end && *at++ != ',') return Corrupt(key, "bad zone row counts");
  }
  return zone_rows;
}

// Compares two scalars of one type with Arrow's comparison kernels.
arrow::Result<bool> Compare(const char* function, const std::shared_ptr<arrow::Scalar>& left,
                            const std::shared_ptr<arrow::Scalar>& right,
                            arrow::compute::ExecContext* context) {
  ARROW_ASSIGN_OR_RAISE(auto result,
                        arrow::compute::CallFunction(function, {left, right}, context));
  const auto& answer = *result.scalar();
  return answer.is_valid && static_cast<const arrow::BooleanScalar&>(answer).value;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> LoadHeader(ObjectContext* object,
                                                              const std::string& column,
                                                              const std::string& identity) {
  const auto key = IndexHeaderKey(column);
  ARROW_ASSIGN_OR_RAISE(auto value, object->GetOmap(key));
  if (!value) return nullptr;
  ARROW_ASSIGN_OR_RAISE(auto header, DecodeOmapValue(*value, key));
  if (!DescribesData(*header, identity)) return nullptr;
  const auto& schema = *header->schema();
  if (schema.num_fields() != 3 || !schema.field(0)->type()->Equals(*schema.field(1)->type()) ||
      !schema.field(2)->type()->Equals(*arrow::int64())) {
    return Corrupt(key, "not an index header");
  }
  return header;
}

}  // namespace

std::optional<std::string> NotIndexable(const arrow::DataType& type) {
  using arrow::Type;
  if (arrow::is_floating(type.id())) {
    return "floating-point values are not indexed (NaN has no place in an order)";
  }
  if (arrow::is_integer(type.id()) || arrow::is_decimal(type.id()) ||
      arrow::is_base_binary_like(type.id())) {
    return std::nullopt;
  }
  switch (type.id()) {
    case Type::BOOL:
    case Type::DATE32:
    case Type::DATE64:
    case Type::TIMESTAMP:
    case Type::TIME32:
    case Type::TIME64:
    case Type::FIXED_SIZE_BINARY:
      return std::nullopt;
    default:
      return "only integer, decimal, date, time, timestamp, string and binary columns are indexed";
  }
}

std::string IndexHeaderKey(const std::string& column) { return kIndexPrefix + column; }

std::string IndexBlockKey(const std::string& column, int64_t block) {
  return IndexHeaderKey(column) + "\n" + std::to_string(block);
}

arrow::Result<std::map<std::string, std::string>> BuildColumnIndex(ObjectReader* reader, int column,
                                                                   const std::string& identity,
                                                                   CallResources* resources) {
  auto* context = resources->exec_context();
  const auto& field = reader->schema()->field(column);
  arrow::ArrayVector chunks;
  std::vector<int64_t> zone_rows;
  for (int zone = 0; zone < reader->num_zones(); ++zone) {
    if (resources->OutOfTime()) {
      return Error(ErrorCode::kLimitExceeded, "indexing the object takes longer than the node's ",
                   resources->limits().max_call_ms, " ms limit per call");
    }
    ARROW_ASSIGN_OR_RAISE(auto batches,
                          reader->ReadZones({column}, ObjectReader::kZoneBatchRows, {zone}));
    ARROW_ASSIGN_OR_RAISE(auto list, batches->ToRecordBatches());
    int64_t rows = 0;
    for (const auto& batch : list) {
      chunks.push_back(batch->column(0));
      rows += batch->num_rows();
    }
    zone_rows.push_back(rows);
  }
  std::shared_ptr<arrow::Array> values;
  if (chunks.empty()) {
    ARROW_ASSIGN_OR_RAISE(values, arrow::MakeEmptyArray(field->type(), resources->pool()));
  } else {
    ARROW_ASSIGN_OR_RAISE(values, arrow::Concatenate(chunks, resources->pool()));
  }
  // Sorted with nulls last (a stable sort keeps rows ascending within a key).
  arrow::compute::ArraySortOptions order(arrow::compute::SortOrder::Ascending,
                                         arrow::compute::NullPlacement::AtEnd);
  ARROW_ASSIGN_OR_RAISE(auto positions, arrow::compute::SortIndices(*values, order, context));
  positions = positions->Slice(0, values->length() - values->null_count());
  ARROW_ASSIGN_OR_RAISE(
      auto keys,
      arrow::compute::Take(*values, *positions, arrow::compute::TakeOptions::Defaults(), context));
  ARROW_ASSIGN_OR_RAISE(auto rows,
                        arrow::compute::Cast(*positions, arrow::int64(),
                                             arrow::compute::CastOptions::Safe(), context));
  const int64_t entries = keys->length();
  const int64_t entry_bytes =
      entries == 0 ? 1 : arrow::util::TotalBufferSize(*keys) / entries + sizeof(int64_t);
  const int64_t per_block =
      std::max<int64_t>(1, kIndexBlockBytes / std::max<int64_t>(1, entry_bytes));
  auto block_schema =
      arrow::schema({arrow::field("key", field->type()), arrow::field("row", arrow::int64())});
  std::map<std::string, std::string> entries_by_key;
  arrow::ArrayVector firsts, lasts;
  arrow::Int64Builder block_rows;
  for (int64_t start = 0, block = 0; start < entries; start += per_block, ++block) {
    const int64_t length = std::min(per_block, entries - start);
    auto block_keys = keys->Slice(start, length);
    auto batch = arrow::RecordBatch::Make(
        block_schema, length, arrow::ArrayVector{block_keys, rows->Slice(start, length)});
    ARROW_ASSIGN_OR_RAISE(entries_by_key[IndexBlockKey(field->name(), block)],
                          EncodeOmapValue(*batch, identity));
    firsts.push_back(block_keys->Slice(0, 1));
    lasts.push_back(block_keys->Slice(length - 1, 1));
    ARROW_RETURN_NOT_OK(block_rows.Append(length));
  }
  std::shared_ptr<arrow::Array> first, last;
  if (firsts.empty()) {
    ARROW_ASSIGN_OR_RAISE(first, arrow::MakeEmptyArray(field->type(), resources->pool()));
    last = first;
  } else {
    ARROW_ASSIGN_OR_RAISE(first, arrow::Concatenate(firsts, resources->pool()));
    ARROW_ASSIGN_OR_RAISE(last, arrow::Concatenate(lasts, resources->pool()));
  }
  ARROW_ASSIGN_OR_RAISE(auto counts, block_rows.Finish());
  auto header_schema =
      arrow::schema({arrow::field("first", field->type()), arrow::field("last", field->type()),
                     arrow::field("rows", arrow::int64())},
                    arrow::key_value_metadata({kZoneRowsMetadata}, {JoinZoneRows(zone_rows)}));
  auto header = arrow::RecordBatch::Make(header_schema, first->length(), {first, last, counts});
  ARROW_ASSIGN_OR_RAISE(entries_by_key[IndexHeaderKey(field->name())],
                        EncodeOmapValue(*header, identity));
  return entries_by_key;
}

arrow::Result<std::optional<IndexMatches>> LookUpIndex(
    ObjectContext* object, const std::string& column, const std::string& identity,
    const arrow::compute::Expression& predicate, const std::shared_ptr<arrow::Scalar>& low,
    const std::shared_ptr<arrow::Scalar>& high, arrow::compute::ExecContext* context) {
  ARROW_ASSIGN_OR_RAISE(auto header, LoadHeader(object, column, identity));
  if (!header) return std::nullopt;
  const auto header_key = IndexHeaderKey(column);
  const auto& key_type = *header->column(0)->type();
  for (const auto& bound : {low, high}) {
    if (bound && !bound->type->Equals(key_type)) {
      return Corrupt(header_key, "its keys are " + key_type.ToString() + ", not the column's " +
                                     bound->type->ToString());
    }
  }
  IndexMatches matches;
  auto zone_text = header->schema()->metadata()->Get(kZoneRowsMetadata);
  if (!zone_text.ok()) return Corrupt(header_key, "no zone row counts");
  ARROW_ASSIGN_OR_RAISE(matches.zone_rows, SplitZoneRows(*zone_text, header_key));
  const auto& counts = static_cast<const arrow::Int64Array&>(*header->column(2));
  for (int64_t block = 0; block < header->num_rows(); ++block) {
    ARROW_ASSIGN_OR_RAISE(auto first, header->column(0)->GetScalar(block));
    ARROW_ASSIGN_OR_RAISE(auto last, header->column(1)->GetScalar(block));
    if (low && low->is_valid) {
      ARROW_ASSIGN_OR_RAISE(bool before, Compare("less", last, low, context));
      if (before) continue;
    }
    if (high && high->is_valid) {
      ARROW_ASSIGN_OR_RAISE(bool after, Compare("greater", first, high, context));
      if (after) break;
    }
    const auto key = IndexBlockKey(column, block);
    ARROW_ASSIGN_OR_RAISE(auto value, object->GetOmap(key));
    if (!value) return Corrupt(key, "the header names a block that is missing");
    matches.omap_bytes += static_cast<int64_t>(value->size());
    ARROW_ASSIGN_OR_RAISE(auto batch, DecodeOmapValue(*value, key));
    if (batch->num_columns() != 2 || batch->num_rows() != counts.Value(block) ||
        !batch->column(0)->type()->Equals(*header->column(0)->type()) ||
        !batch->column(1)->type()->Equals(*arrow::int64())) {
      return Corrupt(key, "not a block of this index");
    }
    auto bound = predicate.Bind(*batch->schema(), context);
    if (!bound.ok())
      return Corrupt(key, "its keys do not fit the filter: " + bound.status().message());
    ARROW_ASSIGN_OR_RAISE(auto keep, arrow::compute::ExecuteScalarExpression(
                                         *bound, *batch->schema(), batch, context));
    ARROW_ASSIGN_OR_RAISE(
        auto rows, arrow::compute::Filter(batch->column(1), keep,
                                          arrow::compute::FilterOptions::Defaults(), context));
    auto kept = std::static_pointer_cast<arrow::Int64Array>(rows.make_array());
    for (int64_t i = 0; i < kept->length(); ++i) matches.rows.push_back(kept->Value(i));
  }
  const int64_t total =
      std::accumulate(matches.zone_rows.begin(), matches.zone_rows.end(), int64_t{0});
  std::sort(matches.rows.begin(), matches.rows.end());
  for (int64_t row : matches.rows) {
    if (row < 0 || row >= total) return Corrupt(header_key, "a row lies outside the object");
  }
  return matches;
}

arrow::Result<std::vector<std::string>> ColumnIndexKeys(ObjectContext* object,
                                                        const std::string& column) {
  std::vector<std::string> keys;
  ARROW_ASSIGN_OR_RAISE(auto header, object->GetOmap(IndexHeaderKey(column)));
  if (!header) return keys;
  keys.push_back(IndexHeaderKey(column));
  // Blocks are numbered from 0 without gaps: no need to trust the header.
  for (int64_t block = 0;; ++block) {
    ARROW_ASSIGN_OR_RAISE(auto found, object->GetOmap(IndexBlockKey(column, block)));
    if (!found) break;
    keys.push_back(IndexBlockKey(column, block));
  }
  return keys;
}

}  // namespace skyhook
