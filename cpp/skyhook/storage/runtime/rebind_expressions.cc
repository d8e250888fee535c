#include "skyhook/storage/runtime/rebind_expressions.h"

#include <utility>
#include <vector>

#include <arrow/compute/expression.h>

namespace skyhook {
namespace {

using arrow::compute::Expression;

// The expression without its kernels: calls by name, literals and fields as they are.
Expression Unbound(const Expression& expression) {
  const Expression::Call* call = expression.call();
  if (call == nullptr) return expression;
  std::vector<Expression> arguments;
  arguments.reserve(call->arguments.size());
  for (const auto& argument : call->arguments) arguments.push_back(Unbound(argument));
  return arrow::compute::call(call->function_name, std::move(arguments), call->options);
}

}  // namespace

arrow::Result<arrow::engine::BoundExpressions> RebindExpressions(
    const arrow::engine::BoundExpressions& bound, arrow::compute::ExecContext* context) {
  arrow::engine::BoundExpressions rebound{{}, bound.schema};
  rebound.named_expressions.reserve(bound.named_expressions.size());
  for (const auto& named : bound.named_expressions) {
    ARROW_ASSIGN_OR_RAISE(auto expression, Unbound(named.expression).Bind(*bound.schema, context));
    if (!expression.type()->Equals(*named.expression.type())) {
      return arrow::Status::Invalid("rebinding ", named.name, " changed its type from ",
                                    named.expression.type()->ToString(), " to ",
                                    expression.type()->ToString());
    }
    rebound.named_expressions.push_back({std::move(expression), named.name});
  }
  return rebound;
}

}  // namespace skyhook
