#include "skyhook/storage/runtime/result_writer.h"

#include <algorithm>

#include <arrow/util/byte_size.h>
#include <arrow/util/key_value_metadata.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/runtime/delta_encoding.h"

namespace skyhook {
namespace {

// An IPC stream's end-of-stream marker: continuation token and a zero length.
constexpr int64_t kEndOfStreamBytes = 8;
constexpr int64_t kNoCap = std::numeric_limits<int64_t>::max();
// Batches are joined while they refer to fewer bytes than this: a copy that
// costs storage little, and a bound on what a call holds before writing.
constexpr int64_t kJoinedBatchBytes = 1 << 20;

}  // namespace

arrow::Result<std::unique_ptr<ResultWriter>> ResultWriter::Open(
    const std::shared_ptr<arrow::Schema>& schema, const ResultOptions& options,
    int64_t node_max_bytes, int64_t object_bytes, arrow::MemoryPool* scratch_pool) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  auto ipc_options = arrow::ipc::IpcWriteOptions::Defaults();
  // Compress on the call's own thread: Arrow's CPU pool is busy with other
  // calls' scans, and a reply queued behind them waits with its call.
  ipc_options.use_threads = false;
  if (options.compression != arrow::Compression::UNCOMPRESSED) {
    ARROW_ASSIGN_OR_RAISE(ipc_options.codec, arrow::util::Codec::Create(options.compression));
  }
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeStreamWriter(sink, schema, ipc_options));
  // Earlier replies of the object count towards its size (a continuation).
  int64_t cap =
      options.within_object ? std::max<int64_t>(0, object_bytes - options.bytes_before) : kNoCap;
  return std::unique_ptr<ResultWriter>(
      new ResultWriter(std::move(sink), std::move(writer), options.max_result_bytes, node_max_bytes,
                       cap, options.batch_size, scratch_pool, options.delta_sorted_integers));
}

arrow::Result<bool> ResultWriter::Fits(const arrow::RecordBatch& batch) const {
  // The bytes the batch refers to bound what it adds (compression only shrinks it).
  ARROW_ASSIGN_OR_RAISE(int64_t size, arrow::util::ReferencedBufferSize(batch));
  return Fits(size);
}

arrow::Result<bool> ResultWriter::Fits(int64_t bytes) const {
  ARROW_ASSIGN_OR_RAISE(int64_t written, sink_->Tell());
  int64_t after = written + pending_bytes_ + bytes;
  if (after > client_max_bytes_) {
    return Error(ErrorCode::kResultTooLarge, "the result exceeds the request's limit of ",
                 client_max_bytes_, " bytes per object");
  }
  return after <= node_max_bytes_;
}

arrow::Status ResultWriter::Write(std::shared_ptr<arrow::RecordBatch> batch) {
  ARROW_ASSIGN_OR_RAISE(int64_t size, arrow::util::ReferencedBufferSize(*batch));
  if (!pending_.empty() && (pending_rows_ + batch->num_rows() > batch_rows_ ||
                            pending_bytes_ + size > kJoinedBatchBytes)) {
    ARROW_RETURN_NOT_OK(WritePending());
  }
  rows_written_ += batch->num_rows();
  pending_rows_ += batch->num_rows();
  pending_bytes_ += size;
  pending_.push_back(std::move(batch));
  // Joined, these might pass the object's size: their compressed size tells
  // now, before storage does more work for a reply a plain read would beat.
  if (bytes_ + pending_bytes_ > object_cap_) return WritePending();
  return arrow::Status::OK();
}

arrow::Status ResultWriter::WritePending() {
  if (pending_.empty()) return arrow::Status::OK();
  std::shared_ptr<arrow::RecordBatch> batch = pending_.front();
  if (pending_.size() > 1) {
    ARROW_ASSIGN_OR_RAISE(batch, arrow::ConcatenateRecordBatches(pending_, scratch_pool_));
  }
  pending_.clear();
  pending_rows_ = pending_bytes_ = 0;
  DeltaEncodedBatch encoded;
  if (delta_encode_) {
    ARROW_ASSIGN_OR_RAISE(encoded, DeltaEncodeSortedIntegers(*batch, scratch_pool_));
  }
  if (encoded.batch) {
    auto metadata = arrow::key_value_metadata({kDeltaMetadataKey}, {encoded.columns});
    ARROW_RETURN_NOT_OK(writer_->WriteRecordBatch(*encoded.batch, metadata));
  } else {
    ARROW_RETURN_NOT_OK(writer_->WriteRecordBatch(*batch));
  }
  // What was written, encoded and compressed, is what counts.
  ARROW_ASSIGN_OR_RAISE(bytes_, sink_->Tell());
  // Compressed sizes are known only once written: stop as soon as the stream
  // and its end marker would not fit.
  return CheckWithinObject(bytes_ + kEndOfStreamBytes);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ResultWriter::Finish() {
  ARROW_RETURN_NOT_OK(WritePending());
  ARROW_RETURN_NOT_OK(writer_->Close());
  ARROW_ASSIGN_OR_RAISE(auto body, sink_->Finish());
  bytes_ = body->size();
  ARROW_RETURN_NOT_OK(CheckWithinObject(bytes_));  // the schema alone may pass a tiny object
  return body;
}

arrow::Status ResultWriter::CheckWithinObject(int64_t bytes) {
  if (bytes <= object_cap_) return arrow::Status::OK();
  over_object_ = true;
  return Error(ErrorCode::kPushedBack, "the reply would pass the ", object_cap_,
               " bytes of the object left for it: a plain read moves less");
}

void ResultWriter::AddStatistics(std::vector<std::pair<std::string, int64_t>>* statistics) const {
  const auto& ipc = writer_->stats();
  // Uncompressed bodies are padded, so decoded is never counted below what moved.
  statistics->emplace_back(
      "bytes_decoded",
      std::max(bytes_, bytes_ - ipc.total_serialized_body_size + ipc.total_raw_body_size));
  if (over_object_) {
    statistics->emplace_back("reply_over_object", 1);
    statistics->emplace_back("bytes_abandoned", bytes_);
  }
}

}  // namespace skyhook
