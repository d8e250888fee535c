// Writes a method's result as an Arrow IPC stream, compressed as asked, and
// checks before each batch whether it still fits the reply: the client's
// limit is a hard one, the node's ends the reply early (a continuation).
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
  /// The reply's memory comes from the default pool: it outlives the call.
  static arrow::Result<std::unique_ptr<ResultWriter>> Open(
      const std::shared_ptr<arrow::Schema>& schema, const ResultOptions& options,
      int64_t node_max_bytes);

  /// Whether `batch` still fits the node's reply limit (if not, the call stops
  /// and the client continues in another call); kResultTooLarge if it would
  /// pass the client's.
  arrow::Result<bool> Fits(const arrow::RecordBatch& batch) const;
  /// The same for `bytes` more (several batches written together).
  arrow::Result<bool> Fits(int64_t bytes) const;
  arrow::Status Write(const arrow::RecordBatch& batch);
  arrow::Result<std::shared_ptr<arrow::Buffer>> Finish();
  int64_t rows_written() const { return rows_written_; }

 private:
  ResultWriter(std::shared_ptr<arrow::io::BufferOutputStream> sink,
               std::shared_ptr<arrow::ipc::RecordBatchWriter> writer, int64_t client_max_bytes,
               int64_t node_max_bytes)
      : sink_(std::move(sink)),
        writer_(std::move(writer)),
        client_max_bytes_(client_max_bytes),
        node_max_bytes_(node_max_bytes) {}

  std::shared_ptr<arrow::io::BufferOutputStream> sink_;
  std::shared_ptr<arrow::ipc::RecordBatchWriter> writer_;
  int64_t client_max_bytes_;
  int64_t node_max_bytes_;
  int64_t rows_written_ = 0;
};

}  // namespace skyhook
