// Statistics of one column, accumulated over its values slice by slice: min,
// max, null count and decoded size. What describe reports for pruning, and
// what indexes and transforms build on.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <arrow/array/array_nested.h>
#include <arrow/compute/exec.h>
#include <arrow/result.h>
#include <arrow/scalar.h>
#include <arrow/type_fwd.h>

namespace skyhook {

class ColumnStatistics {
 public:
  explicit ColumnStatistics(
      std::shared_ptr<arrow::DataType> type,
      arrow::compute::ExecContext* context = arrow::compute::default_exec_context())
      : type_(std::move(type)), context_(context) {}

  /// Adds a slice of the column's values (of the column's type).
  arrow::Status Update(const std::shared_ptr<arrow::Array>& values);

  /// One row {min, max, null_count, bytes}. min and max are null where they
  /// cannot be used for pruning: no non-null value, unorderable types (lists,
  /// structs, ...), and floating columns holding NaN (outside every range).
  arrow::Result<std::shared_ptr<arrow::StructArray>> Finish() const;

  int64_t null_count() const { return null_count_; }
  /// Decoded (Arrow) size of the values: what a reply of this column costs.
  int64_t bytes() const { return bytes_; }

 private:
  arrow::Result<std::shared_ptr<arrow::Array>> Extreme(
      const std::vector<std::shared_ptr<arrow::Scalar>>& candidates, int which) const;

  std::shared_ptr<arrow::DataType> type_;
  arrow::compute::ExecContext* context_;
  int64_t null_count_ = 0;
  int64_t bytes_ = 0;
  bool orderable_ = true;
  std::vector<std::shared_ptr<arrow::Scalar>> minima_, maxima_;  // one per slice
};

}  // namespace skyhook
