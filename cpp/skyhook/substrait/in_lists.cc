#include "skyhook/substrait/in_lists.h"

#include <memory>
#include <utility>
#include <vector>

#include <arrow/array/builder_base.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/type.h>

namespace skyhook {
namespace {

using arrow::compute::Expression;

int FieldIndex(const Expression& expression, const arrow::Schema& schema) {
  const auto* ref = expression.field_ref();
  if (!ref) return -1;
  auto path = ref->FindOne(schema);
  return path.ok() && path->indices().size() == 1 ? path->indices()[0] : -1;
}

bool IsOr(const std::string& function) { return function == "or_kleene" || function == "or"; }

arrow::Result<Expression> AsSets(const Expression& expression, const arrow::Schema& schema,
                                 int64_t* collapsed) {
  const auto* call = expression.call();
  if (call == nullptr) return expression;
  if (IsOr(call->function_name)) {
    arrow::ScalarVector values;
    const int field = EqualityChain(expression, schema, &values);
    if (field >= 0 && values.size() > 1 && !arrow::is_floating(values[0]->type->id())) {
      ARROW_ASSIGN_OR_RAISE(auto builder, arrow::MakeBuilder(values[0]->type));
      ARROW_RETURN_NOT_OK(builder->AppendScalars(values));
      ARROW_ASSIGN_OR_RAISE(auto value_set, builder->Finish());
      // No null among the values: a null x gives null, as each equality does.
      arrow::compute::SetLookupOptions options(value_set,
                                               arrow::compute::SetLookupOptions::INCONCLUSIVE);
      *collapsed += static_cast<int64_t>(values.size());
      return arrow::compute::call("is_in", {arrow::compute::field_ref(arrow::FieldRef(field))},
                                  std::move(options));
    }
  }
  std::vector<Expression> arguments;
  arguments.reserve(call->arguments.size());
  for (const auto& argument : call->arguments) {
    ARROW_ASSIGN_OR_RAISE(auto rewritten, AsSets(argument, schema, collapsed));
    arguments.push_back(std::move(rewritten));
  }
  return arrow::compute::call(call->function_name, std::move(arguments), call->options);
}

}  // namespace

int EqualityChain(const Expression& expression, const arrow::Schema& schema,
                  arrow::ScalarVector* values) {
  const auto* call = expression.call();
  if (!call) return -1;
  if (IsOr(call->function_name)) {
    int field = -1;
    for (const auto& argument : call->arguments) {
      const int found = EqualityChain(argument, schema, values);
      if (found < 0 || (field >= 0 && found != field)) return -1;
      field = found;
    }
    return field;
  }
  if (call->function_name != "equal" || call->arguments.size() != 2) return -1;
  int field = FieldIndex(call->arguments[0], schema);
  const auto* literal = call->arguments[1].literal();
  if (field < 0) {
    field = FieldIndex(call->arguments[1], schema);
    literal = call->arguments[0].literal();
  }
  if (field < 0 || !literal || !literal->is_scalar() || !literal->scalar()->is_valid ||
      !literal->scalar()->type->Equals(*schema.field(field)->type())) {
    return -1;
  }
  values->push_back(literal->scalar());
  return field;
}

arrow::Result<Expression> InListsAsSets(const Expression& bound, const arrow::Schema& schema,
                                        int64_t* collapsed) {
  int64_t replaced = 0;
  ARROW_ASSIGN_OR_RAISE(auto rewritten, AsSets(bound, schema, &replaced));
  if (collapsed != nullptr) *collapsed = replaced;
  if (replaced == 0) return bound;
  return rewritten.Bind(schema);
}

}  // namespace skyhook
