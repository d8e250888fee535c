#include "skyhook/storage/secondary/filter_terms.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include <arrow/array/builder_base.h>
#include <arrow/compute/api_aggregate.h>
#include <arrow/compute/api_scalar.h>

#include "skyhook/substrait/in_lists.h"

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

// A literal in a field's integer domain: its floor there, and whether exact.
struct DomainValue {
  __int128 floor = 0;
  bool exact = true;
};

std::optional<DomainValue> InFieldDomain(const arrow::Scalar& literal,
                                         const arrow::DataType& field) {
  if (field.id() == arrow::Type::DECIMAL128) {
    if (literal.type->id() != arrow::Type::DECIMAL128) return std::nullopt;
    const auto unscaled = IntegerDomainValue(literal);
    if (!unscaled) return std::nullopt;
    const int from = static_cast<const arrow::Decimal128Type&>(*literal.type).scale();
    const int to = static_cast<const arrow::Decimal128Type&>(field).scale();
    if (std::abs(to - from) > 38) return std::nullopt;
    __int128 power = 1;
    for (int digit = 0; digit < std::abs(to - from); ++digit) power *= 10;
    if (to >= from) {
      const __int128 limit = (~static_cast<unsigned __int128>(0) >> 1) / power;
      if (*unscaled > limit || *unscaled < -limit) return std::nullopt;
      return DomainValue{*unscaled * power, true};
    }
    __int128 quotient = *unscaled / power;  // truncated towards zero
    const bool exact = *unscaled % power == 0;
    if (!exact && *unscaled < 0) --quotient;
    return DomainValue{quotient, exact};
  }
  if (!literal.type->Equals(field)) return std::nullopt;
  const auto value = IntegerDomainValue(literal);
  if (!value) return std::nullopt;
  return DomainValue{*value, true};
}

// A field's allowed values while conjuncts are added (wide: bounds may pass int64's).
struct WideRange {
  __int128 low = INT64_MIN;
  __int128 high = INT64_MAX;
  std::vector<int64_t> excluded;
};

void Narrow(WideRange* range, const std::string& function, const DomainValue& value) {
  const __int128 ceiling = value.exact ? value.floor : value.floor + 1;
  if (function == "equal") {
    range->low = std::max(range->low, ceiling);
    range->high = std::min(range->high, value.exact ? value.floor : value.floor - 1);
  } else if (function == "not_equal") {
    if (value.exact && value.floor >= INT64_MIN && value.floor <= INT64_MAX) {
      range->excluded.push_back(static_cast<int64_t>(value.floor));
    }
  } else if (function == "less") {
    range->high = std::min(range->high, value.exact ? value.floor - 1 : value.floor);
  } else if (function == "less_equal") {
    range->high = std::min(range->high, value.floor);
  } else if (function == "greater") {
    range->low = std::max(range->low, value.floor + 1);
  } else if (function == "greater_equal") {
    range->low = std::max(range->low, ceiling);
  }
}

int FieldIndex(const Expression& expression, const arrow::Schema& schema) {
  const auto* ref = expression.field_ref();
  if (!ref) return -1;
  auto path = ref->FindOne(schema);
  return path.ok() && path->indices().size() == 1 ? path->indices()[0] : -1;
}

// A comparison of a field with a literal, written the field first.
struct FieldComparison {
  int field;
  std::string function;
  std::shared_ptr<arrow::Scalar> literal;
};

std::optional<FieldComparison> AsFieldComparison(const Expression::Call& call,
                                                 const arrow::Schema& schema) {
  if (call.arguments.size() != 2) return std::nullopt;
  std::string function = call.function_name;
  int field = FieldIndex(call.arguments[0], schema);
  const auto* literal = call.arguments[1].literal();
  if (field < 0) {
    field = FieldIndex(call.arguments[1], schema);
    literal = call.arguments[0].literal();
    function = Swapped(function);
  }
  if (field < 0 || !literal || !literal->is_scalar()) return std::nullopt;
  return FieldComparison{field, std::move(function), literal->scalar()};
}

void AddTerm(ColumnTerms* terms, Expression predicate, std::shared_ptr<arrow::Scalar> low,
             std::shared_ptr<arrow::Scalar> high, bool first) {
  terms->predicate =
      first ? std::move(predicate) : arrow::compute::and_(terms->predicate, predicate);
  if (low && !terms->low) terms->low = std::move(low);
  if (high && !terms->high) terms->high = std::move(high);
}

// An IN list on a field, when it holds values of the field's type and no null
// (index entries have no nulls: a list matching nulls needs the scan, and
// without them every null matching behaviour answers alike).
void AddInList(std::map<int, ColumnTerms>* terms, int field, const arrow::Schema& schema,
               const std::shared_ptr<arrow::Array>& values) {
  if (values->null_count() > 0 || values->length() == 0 ||
      !values->type()->Equals(*schema.field(field)->type())) {
    return;
  }
  auto extremes = arrow::compute::MinMax(values);
  if (!extremes.ok()) return;
  const auto& pair = extremes->scalar_as<arrow::StructScalar>();
  bool first = terms->count(field) == 0;
  AddTerm(&(*terms)[field],
          arrow::compute::call("is_in", {arrow::compute::field_ref("key")},
                               arrow::compute::SetLookupOptions(values)),
          pair.value[0], pair.value[1], first);
}

// An IN list's field (-1: member is none) and its values: is_in's value set,
// or the literals of an equality chain (how Substrait carries the list).
int InList(const Expression& member, const arrow::Schema& schema,
           std::shared_ptr<arrow::Array>* values) {
  const auto* call = member.call();
  if (call && call->function_name == "is_in" && call->arguments.size() == 1) {
    const int field = FieldIndex(call->arguments[0], schema);
    const auto* options =
        dynamic_cast<const arrow::compute::SetLookupOptions*>(call->options.get());
    if (field < 0 || !options || !options->value_set.is_array()) return -1;
    *values = options->value_set.make_array();
    return field;
  }
  arrow::ScalarVector chain;
  const int field = EqualityChain(member, schema, &chain);
  if (field < 0) return -1;
  auto builder = arrow::MakeBuilder(chain[0]->type);
  if (!builder.ok() || !(*builder)->AppendScalars(chain).ok()) return -1;
  auto array = (*builder)->Finish();
  if (!array.ok()) return -1;
  *values = std::move(*array);
  return field;
}

// Narrows the range of an IN list's field to the list's least and greatest
// values (a row whose value is null or outside them never matches); false
// when member is not an IN list without nulls on an integer-domain field of the object.
bool NarrowToInList(const Expression& member, const arrow::Schema& bound_schema,
                    const arrow::Schema& object_schema, std::map<int, WideRange>* wide) {
  std::shared_ptr<arrow::Array> values;
  const int field = InList(member, bound_schema, &values);
  if (field < 0 || values->length() == 0 || values->null_count() > 0) return false;
  const auto& bound = *bound_schema.field(field);
  const int column = object_schema.GetFieldIndex(bound.name());
  if (column < 0 || !object_schema.field(column)->type()->Equals(*bound.type())) return false;
  std::optional<DomainValue> least, greatest;
  for (int64_t i = 0; i < values->length(); ++i) {
    auto value = values->GetScalar(i);
    if (!value.ok()) return false;
    auto in_domain = InFieldDomain(**value, *bound.type());
    if (!in_domain || !in_domain->exact) return false;
    if (!least || in_domain->floor < least->floor) least = in_domain;
    if (!greatest || in_domain->floor > greatest->floor) greatest = in_domain;
  }
  Narrow(&(*wide)[column], "greater_equal", *least);
  Narrow(&(*wide)[column], "less_equal", *greatest);
  return true;
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
    std::shared_ptr<arrow::Array> values;
    if (IsComparison(call->function_name)) {
      auto comparison = AsFieldComparison(*call, bound_schema);
      if (!comparison) continue;
      const auto& [field, function, value] = *comparison;
      if (!value->is_valid || !value->type->Equals(*bound_schema.field(field)->type())) continue;
      bool first = terms.count(field) == 0;
      auto low = function == "equal" || function.rfind("greater", 0) == 0 ? value : nullptr;
      auto high = function == "equal" || function.rfind("less", 0) == 0 ? value : nullptr;
      AddTerm(&terms[field], arrow::compute::call(function, {key, arrow::compute::literal(value)}),
              low, high, first);
    } else if (int field = InList(member, bound_schema, &values); field >= 0) {
      AddInList(&terms, field, bound_schema, values);
    }
  }
  return terms;
}

std::vector<PhysicalRange> PhysicalRanges(const Expression& filter,
                                          const arrow::Schema& bound_schema,
                                          const arrow::Schema& object_schema, bool* whole) {
  std::vector<Expression> members;
  ConjunctionMembers(filter, &members);
  std::map<int, WideRange> wide;  // by the object's field
  size_t converted = 0;
  for (const auto& member : members) {
    const auto* call = member.call();
    if (!call || !(IsComparison(call->function_name) || call->function_name == "not_equal")) {
      NarrowToInList(member, bound_schema, object_schema,
                     &wide);  // a necessary range, not the member
      continue;
    }
    auto comparison = AsFieldComparison(*call, bound_schema);
    if (!comparison) continue;
    const auto& bound = *bound_schema.field(comparison->field);
    const int column = object_schema.GetFieldIndex(bound.name());
    if (column < 0 || !object_schema.field(column)->type()->Equals(*bound.type())) continue;
    auto value = InFieldDomain(*comparison->literal, *bound.type());
    if (!value) continue;
    Narrow(&wide[column], comparison->function, *value);
    ++converted;
  }
  if (whole != nullptr) *whole = converted == members.size();
  std::vector<PhysicalRange> ranges;
  for (auto& [column, range] : wide) {
    PhysicalRange physical;
    physical.field = column;
    if (range.low > range.high || range.low > INT64_MAX || range.high < INT64_MIN) {
      physical.low = INT64_MAX;  // no value passes
      physical.high = INT64_MIN;
    } else {
      physical.low = static_cast<int64_t>(std::max<__int128>(range.low, INT64_MIN));
      physical.high = static_cast<int64_t>(std::min<__int128>(range.high, INT64_MAX));
      physical.excluded = std::move(range.excluded);
    }
    ranges.push_back(std::move(physical));
  }
  return ranges;
}

}  // namespace skyhook
