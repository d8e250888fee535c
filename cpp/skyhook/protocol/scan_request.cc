#include "skyhook/protocol/scan_request.h"

#include <arrow/engine/substrait/serde.h>

#include "skyhook/protocol/error.h"
#include "skyhook/protocol/frame.h"
#include "skyhook/substrait/request_check.h"

namespace skyhook {
namespace {

using substrait_check::ExpressionRole;

// Adds the expressions' nodes to *nodes.
arrow::Result<std::optional<arrow::engine::BoundExpressions>> DecodeExpressions(
    const HeaderReader& header, const std::string& field, ExpressionRole role, int64_t* nodes) {
  ARROW_ASSIGN_OR_RAISE(auto serialized, header.Binary(field));
  if (!serialized) return std::nullopt;
  auto checked = substrait_check::CheckExtendedExpression(std::string_view(**serialized), role);
  if (!checked.ok()) return WithContext(checked.status(), "the " + field);
  *nodes += *checked;
  auto expressions = arrow::engine::DeserializeExpressions(**serialized);
  if (!expressions.ok()) {
    return Error(ErrorCode::kInvalidRequest, "cannot decode the Substrait ", field, ": ",
                 expressions.status().message());
  }
  return std::move(*expressions);
}

}  // namespace

arrow::Result<ScanRequest> ScanRequest::Decode(const std::shared_ptr<arrow::Buffer>& message) {
  ARROW_ASSIGN_OR_RAISE(auto frame, DecodeFrame(message, kRequestMagic));
  HeaderReader header(frame.header);
  ScanRequest request;
  ARROW_ASSIGN_OR_RAISE(request.filter, DecodeExpressions(header, "filter", ExpressionRole::kFilter,
                                                          &request.expression_nodes));
  ARROW_ASSIGN_OR_RAISE(request.projection,
                        DecodeExpressions(header, "projection", ExpressionRole::kProjection,
                                          &request.expression_nodes));
  if (request.filter) {
    const auto& named = request.filter->named_expressions;
    if (named.size() != 1 || !named[0].expression.type()->Equals(*arrow::boolean())) {
      return Error(ErrorCode::kInvalidRequest, "the filter must be exactly one boolean expression");
    }
  }
  ARROW_ASSIGN_OR_RAISE(request.result, ResultOptions::Decode(header));
  ARROW_ASSIGN_OR_RAISE(request.pushback, PushbackLimits::Decode(header));
  return request;
}

}  // namespace skyhook
