// The request of the index methods (create_index, drop_index): the frame's
// `column` field names the object's column.
#pragma once

#include <memory>
#include <string>

#include <arrow/buffer.h>
#include <arrow/result.h>

#include "skyhook/errors/error.h"
#include "skyhook/protocol/frame.h"

namespace skyhook {

struct ColumnRequest {
  std::string column;

  static arrow::Result<ColumnRequest> Decode(const std::shared_ptr<arrow::Buffer>& message) {
    ARROW_ASSIGN_OR_RAISE(auto frame, DecodeFrame(message, kRequestMagic));
    ARROW_ASSIGN_OR_RAISE(auto column, HeaderReader(frame.header).String("column"));
    if (!column || column->empty() || column->find('\n') != std::string::npos) {
      return Error(ErrorCode::kInvalidRequest, "the request must name one column");
    }
    return ColumnRequest{std::move(*column)};
  }
};

}  // namespace skyhook
