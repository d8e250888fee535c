#include "skyhook/protocol/transform_request.h"

#include "skyhook/errors/error.h"
#include "skyhook/protocol/frame.h"

namespace skyhook {

arrow::Result<TransformRequest> TransformRequest::Decode(
    const std::shared_ptr<arrow::Buffer>& message) {
  ARROW_ASSIGN_OR_RAISE(auto frame, DecodeFrame(message, kRequestMagic));
  HeaderReader header(frame.header);
  ARROW_ASSIGN_OR_RAISE(auto design, header.Binary("design"));
  if (!design) return Error(ErrorCode::kInvalidRequest, "the request carries no design");
  ARROW_ASSIGN_OR_RAISE(auto generation, header.Int64("expected_generation"));
  if (!generation || *generation < 0) {
    return Error(ErrorCode::kInvalidRequest,
                 "the request carries no expected_generation (0 or more)");
  }
  TransformRequest request{std::move(*design), *generation, std::nullopt};
  ARROW_ASSIGN_OR_RAISE(auto rows, header.Binary("rows"));
  if (rows) {
    auto decoded = ScanRequest::Decode(*rows);
    if (!decoded.ok()) return WithContext(decoded.status(), "the request's rows");
    request.rows = std::move(*decoded);
  }
  return request;
}

}  // namespace skyhook
