// Writes a method's result as an Arrow IPC stream, compressed as asked and
// never larger than the request allows.
#pragma once

#include <memory>

#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/writer.h>
#include <arrow/record_batch.h>

#include "skyhook/protocol/result_options.h"

namespace skyhook {

class ResultWriter {
 public:
  static arrow::Result<std::unique_ptr<ResultWriter>> Open(
      const std::shared_ptr<arrow::Schema>& schema, const ResultOptions& options);

  arrow::Status Write(const arrow::RecordBatch& batch);
  arrow::Result<std::shared_ptr<arrow::Buffer>> Finish();
  int64_t rows_written() const { return rows_written_; }

 private:
  ResultWriter(std::shared_ptr<arrow::io::BufferOutputStream> sink,
               std::shared_ptr<arrow::ipc::RecordBatchWriter> writer, int64_t max_bytes)
      : sink_(std::move(sink)), writer_(std::move(writer)), max_bytes_(max_bytes) {}

  std::shared_ptr<arrow::io::BufferOutputStream> sink_;
  std::shared_ptr<arrow::ipc::RecordBatchWriter> writer_;
  int64_t max_bytes_;
  int64_t rows_written_ = 0;
};

}  // namespace skyhook
