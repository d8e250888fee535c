#include "skyhook/storage/runtime/result_writer.h"

#include <arrow/util/byte_size.h>

#include "skyhook/protocol/error.h"

namespace skyhook {

arrow::Result<std::unique_ptr<ResultWriter>> ResultWriter::Open(
    const std::shared_ptr<arrow::Schema>& schema, const ResultOptions& options,
    int64_t node_max_bytes) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  auto ipc_options = arrow::ipc::IpcWriteOptions::Defaults();
  if (options.compression != arrow::Compression::UNCOMPRESSED) {
    ARROW_ASSIGN_OR_RAISE(ipc_options.codec, arrow::util::Codec::Create(options.compression));
  }
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeStreamWriter(sink, schema, ipc_options));
  return std::unique_ptr<ResultWriter>(new ResultWriter(std::move(sink), std::move(writer),
                                                        options.max_result_bytes, node_max_bytes));
}

arrow::Result<bool> ResultWriter::Fits(const arrow::RecordBatch& batch) const {
  // The bytes the batch refers to bound what it adds (compression only shrinks it).
  ARROW_ASSIGN_OR_RAISE(int64_t size, arrow::util::ReferencedBufferSize(batch));
  return Fits(size);
}

arrow::Result<bool> ResultWriter::Fits(int64_t bytes) const {
  ARROW_ASSIGN_OR_RAISE(int64_t written, sink_->Tell());
  int64_t after = written + bytes;
  if (after > client_max_bytes_) {
    return Error(ErrorCode::kResultTooLarge, "the result exceeds the request's limit of ",
                 client_max_bytes_, " bytes per object");
  }
  return after <= node_max_bytes_;
}

arrow::Status ResultWriter::Write(const arrow::RecordBatch& batch) {
  ARROW_RETURN_NOT_OK(writer_->WriteRecordBatch(batch));
  rows_written_ += batch.num_rows();
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ResultWriter::Finish() {
  ARROW_RETURN_NOT_OK(writer_->Close());
  return sink_->Finish();
}

}  // namespace skyhook
