#include "skyhook/storage/methods/plan_aggregate.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>
#include <variant>

#include <arrow/acero/options.h>

#include "proto/plan.pb.h"
#include "skyhook/errors/error.h"

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

// Adds the top-level columns an expression reads to `used`; false when it
// names a column other than by position.
bool AddColumns(const arrow::compute::Expression& expression, std::set<int>* used) {
  for (const auto& ref : arrow::compute::FieldsInExpression(expression)) {
    const auto* path = ref.field_path();
    if (path == nullptr || path->empty()) return false;
    used->insert((*path)[0]);
  }
  return true;
}

// The top-level column a reference names by position, or -1.
int PassedColumn(const arrow::FieldRef* ref) {
  const auto* path = ref == nullptr ? nullptr : ref->field_path();
  return path != nullptr && path->indices().size() == 1 ? (*path)[0] : -1;
}

}  // namespace

std::vector<PlanAggregate::GroupedOnly> PlanAggregate::GroupedOnlyColumns(
    const arrow::acero::Declaration& input) const {
  // Walking down from the aggregate: the column each key is at the current
  // node's output (-1: computed), and the columns used there otherwise.
  std::vector<int> at;
  for (const auto& key : keys_) at.push_back(PassedColumn(&key));
  std::set<int> used;
  for (const auto& aggregate : aggregates_) {
    for (const auto& target : aggregate.target) {
      if (!AddColumns(arrow::compute::field_ref(target), &used)) return {};
    }
  }
  const arrow::acero::Declaration* node = &input;
  while (node->factory_name != "source") {
    if (node->inputs.size() != 1) return {};
    const auto* below = std::get_if<arrow::acero::Declaration>(&node->inputs[0]);
    if (below == nullptr) return {};
    if (node->factory_name == "filter") {
      const auto& options = static_cast<const arrow::acero::FilterNodeOptions&>(*node->options);
      if (!AddColumns(options.filter_expression, &used)) return {};
    } else if (node->factory_name == "project") {
      const auto& options = static_cast<const arrow::acero::ProjectNodeOptions&>(*node->options);
      std::vector<int> next(at.size(), -1);
      std::set<int> used_below;
      for (size_t column = 0; column < options.expressions.size(); ++column) {
        const auto& expression = options.expressions[column];
        const int passed = PassedColumn(expression.field_ref());
        bool carried = false;
        for (size_t key = 0; key < at.size(); ++key) {
          if (at[key] == static_cast<int>(column) && passed >= 0 && used.count(at[key]) == 0) {
            next[key] = passed;
            carried = true;
          }
        }
        if (!carried && !AddColumns(expression, &used_below)) return {};
      }
      at = std::move(next);
      used = std::move(used_below);
    } else {
      return {};
    }
    node = below;
  }
  std::vector<GroupedOnly> grouped;
  for (size_t key = 0; key < at.size(); ++key) {
    if (at[key] < 0 || used.count(at[key]) > 0) continue;
    auto column = std::find_if(grouped.begin(), grouped.end(), [&](const GroupedOnly& column) {
      return column.read_column == at[key];
    });  // keys on one column share its codes
    if (column == grouped.end()) column = grouped.insert(grouped.end(), {at[key], {}});
    // The aggregate's output holds the keys first, then the measures.
    const int output = static_cast<int>(key);
    if (emit_.empty()) column->outputs.push_back(output);
    for (size_t i = 0; i < emit_.size(); ++i) {
      if (emit_[i] == output) column->outputs.push_back(static_cast<int>(i));
    }
  }
  return grouped;
}

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
