#include "skyhook/storage/methods/plan_aggregate.h"

#include <unordered_map>
#include <utility>

#include <arrow/acero/options.h>

#include "proto/plan.pb.h"
#include "skyhook/protocol/error.h"

// Arrow 26 reads a grouping's keys from the deprecated grouping_expressions.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace skyhook {
namespace {

namespace sp = ::proto;
using arrow::engine::Id;

arrow::Status NotSupported(const std::string& what) {
  return Error(ErrorCode::kInvalidRequest, "cannot aggregate in storage: ", what);
}

// A direct reference to a column of the aggregate's input.
arrow::Result<int> ColumnOf(const sp::Expression& expression) {
  if (!expression.has_selection() || !expression.selection().has_direct_reference() ||
      !expression.selection().direct_reference().has_struct_field() ||
      expression.selection().direct_reference().struct_field().has_child()) {
    return NotSupported("keys and measure arguments must be columns of the projection");
  }
  return expression.selection().direct_reference().struct_field().field();
}

// The (uri, name) of each declared function anchor, as the consumer reads them.
std::unordered_map<uint32_t, std::pair<std::string, std::string>> DeclaredFunctions(
    const sp::Plan& plan) {
  std::unordered_map<uint32_t, std::string> uris;
  for (const auto& uri : plan.extension_uris()) uris[uri.extension_uri_anchor()] = uri.uri();
  std::unordered_map<uint32_t, std::pair<std::string, std::string>> functions;
  for (const auto& declaration : plan.extensions()) {
    if (!declaration.has_extension_function()) continue;
    const auto& function = declaration.extension_function();
    const std::string& name = function.name();
    functions[function.function_anchor()] = {uris[function.extension_uri_reference()],
                                             name.substr(0, name.find(':'))};
  }
  return functions;
}

arrow::Result<arrow::compute::Aggregate> MeasureOf(
    const sp::AggregateFunction& measure, bool grouped,
    const std::unordered_map<uint32_t, std::pair<std::string, std::string>>& functions,
    const arrow::engine::ExtensionIdRegistry* registry) {
  auto declared = functions.find(measure.function_reference());
  if (declared == functions.end()) return NotSupported("an undeclared measure");
  const auto& [uri, name] = declared->second;
  // As the consumer: without a URI, by name alone.
  ARROW_ASSIGN_OR_RAISE(auto mapping, uri.empty() || uri == "/"
                                          ? registry->GetSubstraitAggregateToArrowFallback(name)
                                          : registry->GetSubstraitAggregateToArrow(Id{uri, name}));
  // No mapping of the registry reads the output type (Arrow's basic aggregates
  // and partial_measures.cc): Acero types the result from the input.
  arrow::engine::SubstraitCall call(Id{uri, name}, /*output_type=*/nullptr,
                                    /*output_nullable=*/true, grouped);
  for (int i = 0; i < measure.arguments_size(); ++i) {
    if (!measure.arguments(i).has_value())
      return NotSupported("measure arguments other than values");
    ARROW_ASSIGN_OR_RAISE(int column, ColumnOf(measure.arguments(i).value()));
    call.SetValueArg(i, arrow::compute::field_ref(column));
  }
  for (const auto& option : measure.options()) {
    call.SetOption(option.name(), {option.preference().begin(), option.preference().end()});
  }
  return mapping(call);
}

}  // namespace

arrow::Result<PlanAggregate> PlanAggregate::Make(
    std::string_view serialized_plan, const arrow::engine::ExtensionIdRegistry* registry) {
  sp::Plan plan;
  if (!plan.ParseFromArray(serialized_plan.data(), static_cast<int>(serialized_plan.size()))) {
    return NotSupported("the plan does not parse");
  }
  const auto& root = plan.relations(0).root();
  const auto& aggregate = root.input().aggregate();
  PlanAggregate result;
  for (const auto& grouping : aggregate.groupings()) {
    for (const auto& key : grouping.grouping_expressions()) {
      ARROW_ASSIGN_OR_RAISE(int column, ColumnOf(key));
      result.keys_.emplace_back(column);
    }
  }
  auto functions = DeclaredFunctions(plan);
  for (const auto& measure : aggregate.measures()) {
    ARROW_ASSIGN_OR_RAISE(auto converted,
                          MeasureOf(measure.measure(), !result.keys_.empty(), functions, registry));
    result.aggregates_.push_back(std::move(converted));
  }
  if (aggregate.common().has_emit()) {
    const auto& mapping = aggregate.common().emit().output_mapping();
    result.emit_.assign(mapping.begin(), mapping.end());
  }
  result.names_.assign(root.names().begin(), root.names().end());
  return result;
}

arrow::acero::Declaration PlanAggregate::Over(arrow::acero::Declaration input) const {
  arrow::acero::Declaration aggregate("aggregate", {std::move(input)},
                                      arrow::acero::AggregateNodeOptions(aggregates_, keys_));
  if (emit_.empty()) return aggregate;
  std::vector<arrow::compute::Expression> columns;
  for (int index : emit_) columns.push_back(arrow::compute::field_ref(index));
  return arrow::acero::Declaration("project", {std::move(aggregate)},
                                   arrow::acero::ProjectNodeOptions(std::move(columns)));
}

}  // namespace skyhook
