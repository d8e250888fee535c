#include "skyhook/storage/runtime/statistics_reply.h"

#include "skyhook/errors/error.h"
#include "skyhook/storage/runtime/result_writer.h"

namespace skyhook {

arrow::Result<std::shared_ptr<arrow::Buffer>> StatisticsReplyBody(
    const std::shared_ptr<arrow::RecordBatch>& row, const NodeLimits& limits) {
  ARROW_ASSIGN_OR_RAISE(auto writer,
                        ResultWriter::Open(row->schema(), ResultOptions{}, limits.max_reply_bytes));
  ARROW_ASSIGN_OR_RAISE(bool fits, writer->Fits(*row));
  if (!fits) {
    return Error(ErrorCode::kLimitExceeded, "the object's statistics are larger than the node's ",
                 limits.max_reply_bytes, "-byte reply limit");
  }
  ARROW_RETURN_NOT_OK(writer->Write(row));
  return writer->Finish();
}

}  // namespace skyhook
