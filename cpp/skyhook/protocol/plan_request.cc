#include "skyhook/protocol/plan_request.h"

#include "skyhook/errors/error.h"
#include "skyhook/protocol/frame.h"

namespace skyhook {

arrow::Result<PlanRequest> PlanRequest::Decode(const std::shared_ptr<arrow::Buffer>& message) {
  ARROW_ASSIGN_OR_RAISE(auto frame, DecodeFrame(message, kRequestMagic));
  HeaderReader header(frame.header);
  PlanRequest request;
  ARROW_ASSIGN_OR_RAISE(auto plan, header.Binary("plan"));
  if (!plan) return Error(ErrorCode::kInvalidRequest, "the request carries no Substrait plan");
  request.plan = *plan;
  ARROW_ASSIGN_OR_RAISE(request.result, ResultOptions::Decode(header));
  ARROW_ASSIGN_OR_RAISE(request.pushback, PushbackLimits::Decode(header));
  return request;
}

}  // namespace skyhook
