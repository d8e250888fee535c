// Statistics of every column of a table, accumulated batch by batch: the row
// count and a ColumnStatistics per column, finished as one row.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <arrow/compute/exec.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "skyhook/storage/statistics/column_statistics.h"

namespace skyhook {

class TableStatistics {
 public:
  explicit TableStatistics(
      std::shared_ptr<arrow::Schema> schema,
      arrow::compute::ExecContext* context = arrow::compute::default_exec_context());

  /// Adds a batch of the schema's columns.
  arrow::Status Update(const arrow::RecordBatch& batch);

  /// One row with a struct column per table column, named after it (see
  /// ColumnStatistics::Finish); the schema keeps the table's metadata.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Finish() const;

  int64_t num_rows() const { return num_rows_; }

 private:
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<ColumnStatistics> columns_;
  int64_t num_rows_ = 0;
};

}  // namespace skyhook
