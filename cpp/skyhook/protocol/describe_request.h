// The request of the describe method: a frame with no fields beyond `method`.
#pragma once

#include <memory>

#include <arrow/buffer.h>
#include <arrow/result.h>

#include "skyhook/protocol/frame.h"

namespace skyhook {

struct DescribeRequest {
  static arrow::Result<DescribeRequest> Decode(const std::shared_ptr<arrow::Buffer>& message) {
    ARROW_RETURN_NOT_OK(DecodeFrame(message, kRequestMagic).status());
    return DescribeRequest{};
  }
};

}  // namespace skyhook
