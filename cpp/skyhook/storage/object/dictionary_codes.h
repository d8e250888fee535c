// One code per distinct value of a text column across an object, from the
// dictionaries its row groups were decoded with (dictionary_columns.h): a plan
// that only groups on the column groups on these integers instead of hashing
// the gathered text (Acero's grouper refuses differing dictionaries, and each
// Parquet row group has its own).
#pragma once

#include <memory>
#include <vector>

#include <arrow/array.h>
#include <arrow/compute/exec.h>
#include <arrow/result.h>
#include <arrow/util/hashing.h>

namespace skyhook {

class DictionaryCodes {
 public:
  /// Codes of values of `type` (string or binary), held in `pool`; more than
  /// max_values distinct values or max_bytes of them is an error.
  DictionaryCodes(std::shared_ptr<arrow::DataType> type, arrow::MemoryPool* pool,
                  int32_t max_values, int64_t max_bytes);

  /// The int32 codes of a dictionary column's values (nulls stay null). Its
  /// dictionary is checked once (valid text of the type, no nulls), every
  /// index of a valid row against it.
  arrow::Result<std::shared_ptr<arrow::Array>> Encode(const arrow::Array& column);

  /// The values of codes, as the column's type.
  arrow::Result<std::shared_ptr<arrow::Array>> Decode(const arrow::Array& codes,
                                                      arrow::compute::ExecContext* context) const;

  const std::shared_ptr<arrow::DataType>& type() const { return type_; }

 private:
  arrow::Status Map(const std::shared_ptr<arrow::ArrayData>& dictionary);
  arrow::Status OverLimit() const;

  std::shared_ptr<arrow::DataType> type_;
  arrow::MemoryPool* pool_;
  int32_t max_values_;
  int64_t max_bytes_;
  arrow::internal::BinaryMemoTable<arrow::BinaryBuilder> values_;
  std::shared_ptr<arrow::ArrayData> mapped_;  // the dictionary code_of_ maps (held: its address)
  std::vector<int32_t> code_of_;              // per index of mapped_
};

}  // namespace skyhook
