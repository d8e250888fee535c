// Writes a method's result as an Arrow IPC stream, compressed as asked, and
// checks before each batch whether it still fits the reply: the client's
// limit is a hard one, the node's ends the reply early (a continuation). A
// reply asked to stay within its object's size is abandoned (pushed back) as
// soon as its compressed bytes pass the object's: a plain read moves less.
// Asked to, it writes sorted integer columns as their differences
// (delta_encoding.h), naming them in the batch's metadata. Small batches (a
// selective filter leaves a few rows per row group) are joined up to the
// request's batch size before they are written: a client pays per batch it
// decodes, and a codec per buffer it decompresses.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/writer.h>
#include <arrow/memory_pool.h>
#include <arrow/record_batch.h>

#include "skyhook/protocol/result_options.h"

namespace skyhook {

class ResultWriter {
 public:
  /// The reply's memory comes from the default pool: it outlives the call.
  /// object_bytes: the object's size, the cap of a reply asked to stay within it.
  /// scratch_pool: the call's pool, for batches encoded before they are written.
  static arrow::Result<std::unique_ptr<ResultWriter>> Open(
      const std::shared_ptr<arrow::Schema>& schema, const ResultOptions& options,
      int64_t node_max_bytes, int64_t object_bytes = 0,
      arrow::MemoryPool* scratch_pool = arrow::default_memory_pool());

  /// Whether `batch` still fits the node's reply limit (if not, the call stops
  /// and the client continues in another call); kResultTooLarge if it would
  /// pass the client's. Its referenced bytes bound what it adds, encoded or not.
  arrow::Result<bool> Fits(const arrow::RecordBatch& batch) const;
  /// The same for `bytes` more (several batches written together).
  arrow::Result<bool> Fits(int64_t bytes) const;
  /// kPushedBack once the reply has passed its object's size (checked as
  /// joined batches are written).
  arrow::Status Write(std::shared_ptr<arrow::RecordBatch> batch);
  arrow::Result<std::shared_ptr<arrow::Buffer>> Finish();
  /// Rows taken by Write, joined batches still waiting included.
  int64_t rows_written() const { return rows_written_; }

  /// bytes_decoded (the reply with its bodies uncompressed), and when the reply
  /// was abandoned for passing its object's size, reply_over_object and the
  /// bytes_abandoned that storage encoded for nothing.
  void AddStatistics(std::vector<std::pair<std::string, int64_t>>* statistics) const;

 private:
  ResultWriter(std::shared_ptr<arrow::io::BufferOutputStream> sink,
               std::shared_ptr<arrow::ipc::RecordBatchWriter> writer, int64_t client_max_bytes,
               int64_t node_max_bytes, int64_t object_cap, int64_t batch_rows,
               arrow::MemoryPool* scratch_pool, bool delta_encode)
      : sink_(std::move(sink)),
        writer_(std::move(writer)),
        client_max_bytes_(client_max_bytes),
        node_max_bytes_(node_max_bytes),
        object_cap_(object_cap),
        batch_rows_(batch_rows),
        scratch_pool_(scratch_pool),
        delta_encode_(delta_encode) {}

  arrow::Status WritePending();
  arrow::Status CheckWithinObject(int64_t bytes);

  std::shared_ptr<arrow::io::BufferOutputStream> sink_;
  std::shared_ptr<arrow::ipc::RecordBatchWriter> writer_;
  int64_t client_max_bytes_;
  int64_t node_max_bytes_;
  int64_t object_cap_;                // the most this reply may hold; no cap: int64 max
  int64_t batch_rows_;                // joined batches are written at this many rows
  arrow::MemoryPool* scratch_pool_;   // joined and delta-encoded batches, until written
  bool delta_encode_;                 // false: sorted integer columns go as they are
  arrow::RecordBatchVector pending_;  // taken, not yet written: joined when written
  int64_t pending_rows_ = 0;
  int64_t pending_bytes_ = 0;  // the bytes pending batches refer to
  int64_t rows_written_ = 0;
  int64_t bytes_ = 0;  // written so far (or in all, once finished)
  bool over_object_ = false;
};

}  // namespace skyhook
