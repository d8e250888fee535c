#include "skyhook/storage/secondary/filter_terms.h"

#include <string>

#include <arrow/array/builder_base.h>
#include <arrow/compute/api_aggregate.h>
#include <arrow/compute/api_scalar.h>

namespace skyhook {
namespace {

using arrow::compute::Expression;

void ConjunctionMembers(const Expression& expression, std::vector<Expression>* members) {
  const auto* call = expression.call();
  if (call && (call->function_name == "and_kleene" || call->function_name == "and")) {
    for (const auto& argument : call->arguments) ConjunctionMembers(argument, members);
    return;
  }
  members->push_back(expression);
}

// The comparison that holds with its operands swapped.
std::string Swapped(const std::string& function) {
  if (function == "less") return "greater";
  if (function == "less_equal") return "greater_equal";
  if (function == "greater") return "less";
  if (function == "greater_equal") return "less_equal";
  return function;  // equal
}

bool IsComparison(const std::string& function) {
  return function == "equal" || function == "less" || function == "less_equal" ||
         function == "greater" || function == "greater_equal";
}

int FieldIndex(const Expression& expression, const arrow::Schema& schema) {
  const auto* ref = expression.field_ref();
  if (!ref) return -1;
  auto path = ref->FindOne(schema);
  return path.ok() && path->indices().size() == 1 ? path->indices()[0] : -1;
}

// The field and values of `x == a or x == b or ...` (how Substrait carries
// an IN list), or -1 when the expression is not such a chain.
int EqualityChain(const Expression& expression, const arrow::Schema& schema,
                  arrow::ScalarVector* values) {
  const auto* call = expression.call();
  if (!call) return -1;
  if (call->function_name == "or_kleene" || call->function_name == "or") {
    int field = -1;
    for (const auto& argument : call->arguments) {
      int found = EqualityChain(argument, schema, values);
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

void AddTerm(ColumnTerms* terms, Expression predicate, std::shared_ptr<arrow::Scalar> low,
             std::shared_ptr<arrow::Scalar> high, bool first) {
  terms->predicate =
      first ? std::move(predicate) : arrow::compute::and_(terms->predicate, predicate);
  if (low && !terms->low) terms->low = std::move(low);
  if (high && !terms->high) terms->high = std::move(high);
}

// An IN list on a field, when it holds values of the field's type and no null
// (index entries have no nulls: a list matching nulls needs the scan).
void AddInList(std::map<int, ColumnTerms>* terms, int field, const arrow::Schema& schema,
               const std::shared_ptr<arrow::Array>& values,
               const arrow::compute::SetLookupOptions& options) {
  if (values->null_count() > 0 || values->length() == 0 ||
      !values->type()->Equals(*schema.field(field)->type())) {
    return;
  }
  auto extremes = arrow::compute::MinMax(values);
  if (!extremes.ok()) return;
  const auto& pair = extremes->scalar_as<arrow::StructScalar>();
  bool first = terms->count(field) == 0;
  AddTerm(&(*terms)[field],
          arrow::compute::call("is_in", {arrow::compute::field_ref("key")}, options), pair.value[0],
          pair.value[1], first);
}

}  // namespace

std::map<int, ColumnTerms> ExtractColumnTerms(const Expression& filter,
                                              const arrow::Schema& bound_schema) {
  std::vector<Expression> members;
  ConjunctionMembers(filter, &members);
  std::map<int, ColumnTerms> terms;
  const auto key = arrow::compute::field_ref("key");
  for (const auto& member : members) {
    const auto* call = member.call();
    if (!call || call->arguments.empty()) continue;
    arrow::ScalarVector chain;
    if (IsComparison(call->function_name) && call->arguments.size() == 2) {
      std::string function = call->function_name;
      int field = FieldIndex(call->arguments[0], bound_schema);
      const auto* literal = call->arguments[1].literal();
      if (field < 0) {
        field = FieldIndex(call->arguments[1], bound_schema);
        literal = call->arguments[0].literal();
        function = Swapped(function);
      }
      if (field < 0 || !literal || !literal->is_scalar()) continue;
      auto value = literal->scalar();
      if (!value->is_valid || !value->type->Equals(*bound_schema.field(field)->type())) continue;
      bool first = terms.count(field) == 0;
      auto low = function == "equal" || function.rfind("greater", 0) == 0 ? value : nullptr;
      auto high = function == "equal" || function.rfind("less", 0) == 0 ? value : nullptr;
      AddTerm(&terms[field], arrow::compute::call(function, {key, arrow::compute::literal(value)}),
              low, high, first);
    } else if (call->function_name == "is_in" && call->arguments.size() == 1) {
      int field = FieldIndex(call->arguments[0], bound_schema);
      const auto* options =
          dynamic_cast<const arrow::compute::SetLookupOptions*>(call->options.get());
      if (field < 0 || !options || !options->value_set.is_array()) continue;
      AddInList(&terms, field, bound_schema, options->value_set.make_array(), *options);
    } else if (int field = EqualityChain(member, bound_schema, &chain); field >= 0) {
      arrow::ScalarVector values = chain;
      auto builder = arrow::MakeBuilder(values[0]->type);
      if (!builder.ok() || !(*builder)->AppendScalars(values).ok()) continue;
      auto array = (*builder)->Finish();
      if (!array.ok()) continue;
      AddInList(&terms, field, bound_schema, *array, arrow::compute::SetLookupOptions(*array));
    }
  }
  return terms;
}

}  // namespace skyhook
