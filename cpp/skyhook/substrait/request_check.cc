#include "skyhook/substrait/request_check.h"

#include <vector>

#include <arrow/type.h>

#include "proto/extended_expression.pb.h"
#include "proto/plan.pb.h"
#include "skyhook/substrait/expression_check.h"

// Arrow 26 reads a grouping's keys from the deprecated grouping_expressions.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace skyhook::substrait_check {
namespace {

constexpr char kObjectTable[] = "object";
constexpr int kMaxProjections = Limits::kMaxFields;

using Columns = std::vector<sp::Type>;

// What a relation outputs after its emit, if it has one.
arrow::Result<Columns> Emit(const sp::RelCommon& common, Columns columns) {
  ARROW_RETURN_NOT_OK(OnlyFields(common, {"direct", "emit"}));
  if (!common.has_emit()) return columns;
  ARROW_RETURN_NOT_OK(OnlyFields(common.emit(), {"output_mapping"}));
  const auto& mapping = common.emit().output_mapping();
  if (mapping.size() > Limits::kMaxFields) return Reject("an emit wider than the limit");
  Columns emitted;
  for (int32_t index : mapping) {
    if (index < 0 || static_cast<size_t>(index) >= columns.size()) {
      return Error(ErrorCode::kInvalidRequest, "emit index ", index,
                   " is out of range: the relation has ", columns.size(), " columns");
    }
    emitted.push_back(columns[index]);
  }
  return emitted;
}

class PlanChecker {
 public:
  explicit PlanChecker(const Declarations& declared)
      : declared_(declared), expressions_(declared, &budget_) {}

  // read | filter -> read | project -> ... | aggregate -> project -> ...
  arrow::Result<Columns> Check(const sp::Rel& rel, bool aggregate_allowed, bool project_required) {
    ARROW_RETURN_NOT_OK(budget_.Visit(0));
    ARROW_RETURN_NOT_OK(OnlyFields(rel, {}, "rel_type"));
    if (rel.has_aggregate() && aggregate_allowed) return CheckAggregate(rel.aggregate());
    if (rel.has_project() && project_required) return CheckProject(rel.project());
    if (rel.has_filter() && !project_required) return CheckFilter(rel.filter());
    if (rel.has_read() && !project_required) return CheckRead(rel.read());
    return Reject("expected [aggregate ->] project -> [filter ->] read");
  }

  int64_t expression_nodes() const { return budget_.expression_nodes(); }

 private:
  arrow::Result<Columns> CheckRead(const sp::ReadRel& read) {
    // The only thing a plan reads is the object the method runs on.
    if (!read.has_named_table() || read.named_table().names_size() != 1 ||
        read.named_table().names(0) != kObjectTable) {
      return Reject("a plan may only read the named table '", kObjectTable, "'");
    }
    ARROW_RETURN_NOT_OK(OnlyFields(read, {"common", "base_schema", "named_table"}));
    ARROW_RETURN_NOT_OK(OnlyFields(read.named_table(), {"names"}));
    ARROW_ASSIGN_OR_RAISE(auto columns, CheckNamedStruct(read.base_schema(), declared_, &budget_));
    return Emit(read.common(), std::move(columns));
  }

  arrow::Result<Columns> CheckFilter(const sp::FilterRel& filter) {
    ARROW_RETURN_NOT_OK(OnlyFields(filter, {"common", "input", "condition"}));
    ARROW_ASSIGN_OR_RAISE(auto columns, Check(filter.input(), false, false));
    if (!filter.has_condition()) return Reject("a filter without a condition");
    ARROW_RETURN_NOT_OK(expressions_.CheckCondition(filter.condition(), columns));
    return Emit(filter.common(), std::move(columns));
  }

  arrow::Result<Columns> CheckProject(const sp::ProjectRel& project) {
    ARROW_RETURN_NOT_OK(OnlyFields(project, {"common", "input", "expressions"}));
    if (project.expressions_size() > kMaxProjections) return Reject("too many projections");
    ARROW_ASSIGN_OR_RAISE(auto columns, Check(project.input(), false, false));
    Columns output = columns;
    for (const auto& expression : project.expressions()) {
      ARROW_ASSIGN_OR_RAISE(auto type, expressions_.Check(expression, columns));
      output.push_back(std::move(type));
    }
    return Emit(project.common(), std::move(output));
  }

  arrow::Result<Columns> CheckAggregate(const sp::AggregateRel& aggregate) {
    ARROW_RETURN_NOT_OK(OnlyFields(aggregate, {"common", "input", "groupings", "measures"}));
    ARROW_ASSIGN_OR_RAISE(auto columns, Check(aggregate.input(), false, true));
    if (aggregate.groupings_size() > 1) return Reject("more than one grouping set");
    if (aggregate.measures_size() > kMaxProjections) return Reject("too many measures");
    Columns output;
    for (const auto& grouping : aggregate.groupings()) {
      ARROW_RETURN_NOT_OK(OnlyFields(grouping, {"grouping_expressions"}));
      if (grouping.grouping_expressions_size() > kMaxProjections) return Reject("too many keys");
      for (const auto& key : grouping.grouping_expressions()) {
        ARROW_ASSIGN_OR_RAISE(auto type, expressions_.Check(key, columns));
        output.push_back(std::move(type));
      }
    }
    for (const auto& measure : aggregate.measures()) {
      ARROW_RETURN_NOT_OK(OnlyFields(measure, {"measure"}));
      ARROW_ASSIGN_OR_RAISE(auto type, expressions_.CheckMeasure(measure.measure(), columns));
      output.push_back(std::move(type));
    }
    return Emit(aggregate.common(), std::move(output));
  }

  const Declarations& declared_;
  Budget budget_;
  ExpressionChecker expressions_;
};

}  // namespace

arrow::Result<int64_t> CheckExtendedExpression(std::string_view serialized, ExpressionRole role) {
  sp::ExtendedExpression message;
  ARROW_RETURN_NOT_OK(
      Parse(serialized, role == ExpressionRole::kFilter ? "filter" : "projection", &message));
  ARROW_RETURN_NOT_OK(OnlyFields(
      message, {"version", "extension_uris", "extensions", "referred_expr", "base_schema"}));
  ARROW_ASSIGN_OR_RAISE(auto declared,
                        Declarations::Check(message.extension_uris(), message.extensions()));
  Budget budget;
  ARROW_ASSIGN_OR_RAISE(auto columns, CheckNamedStruct(message.base_schema(), declared, &budget));
  ExpressionChecker expressions(declared, &budget);
  const auto& referred = message.referred_expr();
  if (role == ExpressionRole::kFilter && referred.size() != 1) {
    return Error(ErrorCode::kInvalidRequest, "the filter must be exactly one boolean expression");
  }
  if (referred.size() > kMaxProjections) return Reject("too many projections");
  for (const auto& reference : referred) {
    ARROW_RETURN_NOT_OK(OnlyFields(reference, {"expression", "output_names"}));
    if (!reference.has_expression()) return Reject("measures in a scan");
    ARROW_ASSIGN_OR_RAISE(auto type, expressions.Check(reference.expression(), columns));
    // pyarrow names list elements here, unlike in schemas: Arrow reads the first.
    if (reference.output_names_size() < 1 || reference.output_names_size() > Limits::kMaxFields) {
      return Reject("an expression with ", reference.output_names_size(), " output names");
    }
    if (role == ExpressionRole::kFilter && ClassOf(type, declared) != TypeClass::kBoolean) {
      return Error(ErrorCode::kInvalidRequest, "the filter must be exactly one boolean expression");
    }
  }
  return budget.expression_nodes();
}

arrow::Result<CheckedPlan> CheckPlan(std::string_view serialized) {
  sp::Plan plan;
  ARROW_RETURN_NOT_OK(Parse(serialized, "plan", &plan));
  ARROW_RETURN_NOT_OK(OnlyFields(plan, {"version", "extension_uris", "extensions", "relations"}));
  if (plan.relations_size() != 1 || !plan.relations(0).has_root()) {
    return Reject("a plan must have exactly one relation, a root");
  }
  ARROW_ASSIGN_OR_RAISE(auto declared,
                        Declarations::Check(plan.extension_uris(), plan.extensions()));
  const auto& root = plan.relations(0).root();
  ARROW_RETURN_NOT_OK(OnlyFields(plan.relations(0), {"root"}));
  ARROW_RETURN_NOT_OK(OnlyFields(root, {"input", "names"}));
  PlanChecker checker(declared);
  ARROW_ASSIGN_OR_RAISE(auto columns, checker.Check(root.input(), true, true));
  int64_t names_needed = 0;
  for (const auto& column : columns) names_needed += NamesFor(column);
  if (root.names_size() != names_needed) {
    return Reject("the plan names ", root.names_size(), " output columns of ", names_needed);
  }
  CheckedPlan checked;
  checked.has_aggregate = root.input().has_aggregate();
  checked.expression_nodes = checker.expression_nodes();
  if (checked.has_aggregate) {
    sp::Plan input = plan;
    *input.mutable_relations(0)->mutable_rel() = root.input().aggregate().input();
    checked.input_plan = input.SerializeAsString();
  }
  return checked;
}

}  // namespace skyhook::substrait_check
