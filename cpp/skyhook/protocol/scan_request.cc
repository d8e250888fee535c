#include "skyhook/protocol/scan_request.h"

#include <algorithm>

#include <arrow/engine/substrait/serde.h>

#include "skyhook/errors/error.h"
#include "skyhook/protocol/decoded_requests.h"
#include "skyhook/protocol/frame.h"
#include "skyhook/substrait/in_lists.h"
#include "skyhook/substrait/request_check.h"

namespace skyhook {
namespace {

using substrait_check::ExpressionRole;

// An expression message checked and decoded: a pure function of its bytes and role.
struct CheckedExpressions {
  arrow::engine::BoundExpressions expressions;
  int64_t nodes = 0;
};

arrow::Result<CheckedExpressions> CheckAndDeserialize(const arrow::Buffer& serialized,
                                                      const std::string& field,
                                                      ExpressionRole role) {
  auto checked = substrait_check::CheckExtendedExpression(std::string_view(serialized), role);
  if (!checked.ok()) return WithContext(checked.status(), "the " + field);
  auto expressions = arrow::engine::DeserializeExpressions(serialized);
  if (!expressions.ok()) {
    return Error(ErrorCode::kInvalidRequest, "cannot decode the Substrait ", field, ": ",
                 expressions.status().message());
  }
  int64_t nodes = *checked;
  for (auto& named : expressions->named_expressions) {
    int64_t collapsed = 0;
    auto as_sets = InListsAsSets(named.expression, *expressions->schema, &collapsed);
    if (!as_sets.ok()) continue;  // evaluated as decoded
    named.expression = std::move(*as_sets);
    nodes -= collapsed;  // a lookup per row, however long the list
  }
  return CheckedExpressions{std::move(*expressions), std::max<int64_t>(nodes, 1)};
}

// Adds the expressions' nodes to *nodes. A query's later calls find them kept.
arrow::Result<std::optional<arrow::engine::BoundExpressions>> DecodeExpressions(
    const HeaderReader& header, const std::string& field, ExpressionRole role, int64_t* nodes) {
  ARROW_ASSIGN_OR_RAISE(auto serialized, header.Binary(field));
  if (!serialized) return std::nullopt;
  std::string key(1, static_cast<char>(role));  // a filter's bytes are checked as a filter
  key.append(std::string_view(**serialized));
  ARROW_ASSIGN_OR_RAISE(auto decoded,
                        DecodedRequests<CheckedExpressions>::Process()->GetOrDecode(
                            key, [&]() { return CheckAndDeserialize(**serialized, field, role); }));
  *nodes += decoded->nodes;
  return decoded->expressions;
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
