#include "skyhook/storage/runtime/delta_encoding.h"

#include <type_traits>
#include <utility>

#include <arrow/array.h>
#include <arrow/buffer.h>
#include <arrow/type_traits.h>

namespace skyhook {
namespace {

// The differences of a non-decreasing column; null when it is not one.
template <typename ArrowType>
arrow::Result<std::shared_ptr<arrow::Array>> Differences(const arrow::ArrayData& data,
                                                         arrow::MemoryPool* pool) {
  using Value = typename ArrowType::c_type;
  using Unsigned = std::make_unsigned_t<Value>;
  const Value* values = data.GetValues<Value>(1);
  for (int64_t i = 1; i < data.length; ++i) {
    if (values[i] < values[i - 1]) return nullptr;
  }
  ARROW_ASSIGN_OR_RAISE(
      auto buffer, arrow::AllocateBuffer(data.length * static_cast<int64_t>(sizeof(Value)), pool));
  // Unsigned arithmetic wraps where signed would overflow (INT64_MIN to MAX);
  // the client's cumulative sum wraps back the same way.
  auto* out = buffer->mutable_data_as<Unsigned>();
  Unsigned previous = 0;
  for (int64_t i = 0; i < data.length; ++i) {
    auto value = static_cast<Unsigned>(values[i]);
    out[i] = static_cast<Unsigned>(value - previous);
    previous = value;
  }
  return arrow::MakeArray(
      arrow::ArrayData::Make(data.type, data.length, {nullptr, std::move(buffer)}, 0));
}

arrow::Result<std::shared_ptr<arrow::Array>> DifferencesIfSorted(const arrow::Array& column,
                                                                 arrow::MemoryPool* pool) {
  if (column.null_count() != 0) return nullptr;
  const auto& data = *column.data();
  switch (column.type_id()) {
    case arrow::Type::INT8:
      return Differences<arrow::Int8Type>(data, pool);
    case arrow::Type::INT16:
      return Differences<arrow::Int16Type>(data, pool);
    case arrow::Type::INT32:
      return Differences<arrow::Int32Type>(data, pool);
    case arrow::Type::INT64:
      return Differences<arrow::Int64Type>(data, pool);
    case arrow::Type::UINT8:
      return Differences<arrow::UInt8Type>(data, pool);
    case arrow::Type::UINT16:
      return Differences<arrow::UInt16Type>(data, pool);
    case arrow::Type::UINT32:
      return Differences<arrow::UInt32Type>(data, pool);
    case arrow::Type::UINT64:
      return Differences<arrow::UInt64Type>(data, pool);
    default:
      return nullptr;
  }
}

}  // namespace

arrow::Result<DeltaEncodedBatch> DeltaEncodeSortedIntegers(const arrow::RecordBatch& batch,
                                                           arrow::MemoryPool* pool) {
  DeltaEncodedBatch encoded;
  if (batch.num_rows() < kMinDeltaRows) return encoded;
  arrow::ArrayVector columns = batch.columns();
  for (int i = 0; i < batch.num_columns(); ++i) {
    ARROW_ASSIGN_OR_RAISE(auto differences, DifferencesIfSorted(*columns[i], pool));
    if (!differences) continue;
    columns[i] = std::move(differences);
    if (!encoded.columns.empty()) encoded.columns += ",";
    encoded.columns += std::to_string(i);
  }
  if (!encoded.columns.empty()) {
    encoded.batch = arrow::RecordBatch::Make(batch.schema(), batch.num_rows(), std::move(columns));
  }
  return encoded;
}

}  // namespace skyhook
