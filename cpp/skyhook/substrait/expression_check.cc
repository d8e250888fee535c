#include "skyhook/substrait/expression_check.h"

#include <optional>
#include <string>
#include <unordered_map>

namespace skyhook::substrait_check {
namespace {

using Rex = sp::Expression::RexTypeCase;
using LiteralKind = sp::Expression::Literal::LiteralTypeCase;

// The scalar functions storage runs, by family: what the client's filters and
// projections use and Arrow's Substrait consumer maps faithfully.
enum class Family {
  kComparison,       // two comparable arguments of one type -> boolean
  kLogical,          // two booleans -> boolean
  kNot,              // one boolean -> boolean
  kNullCheck,        // any one argument -> boolean
  kFloatCheck,       // one floating-point argument -> boolean
  kArithmetic,       // two numbers of one kind -> a number of that kind
  kUnaryArithmetic,  // one number -> a number of its kind
  kStringMatch,      // two strings -> boolean
};

const std::unordered_map<std::string, Family>& ScalarFunctions() {
  static const std::unordered_map<std::string, Family> functions = {
      {"equal", Family::kComparison},
      {"not_equal", Family::kComparison},
      {"lt", Family::kComparison},
      {"gt", Family::kComparison},
      {"lte", Family::kComparison},
      {"gte", Family::kComparison},
      {"and", Family::kLogical},
      {"or", Family::kLogical},
      {"not", Family::kNot},
      {"is_null", Family::kNullCheck},
      {"is_not_null", Family::kNullCheck},
      {"is_nan", Family::kFloatCheck},
      {"is_finite", Family::kFloatCheck},
      {"is_infinite", Family::kFloatCheck},
      {"add", Family::kArithmetic},
      {"subtract", Family::kArithmetic},
      {"multiply", Family::kArithmetic},
      {"divide", Family::kArithmetic},
      {"negate", Family::kUnaryArithmetic},
      {"abs", Family::kUnaryArithmetic},
      {"exp", Family::kUnaryArithmetic},
      {"starts_with", Family::kStringMatch},
      {"ends_with", Family::kStringMatch},
      {"contains", Family::kStringMatch},
  };
  return functions;
}

enum class Measure { kCount, kCountRows, kNumeric, kOrdered, kAny, kBoolean, kSketch };

const std::unordered_map<std::string, Measure>& AggregateFunctions() {
  static const std::unordered_map<std::string, Measure> functions = {
      {"count", Measure::kCount},      {"sum", Measure::kNumeric},     {"avg", Measure::kNumeric},
      {"variance", Measure::kNumeric}, {"std_dev", Measure::kNumeric}, {"min", Measure::kOrdered},
      {"max", Measure::kOrdered},      {"first", Measure::kAny},       {"last", Measure::kAny},
  };
  return functions;
}

// skyhook's own partial states, which storage maps to Acero's kernels
// (storage/methods/partial_measures.h).
const std::unordered_map<std::string, Measure>& PartialStateFunctions() {
  static const std::unordered_map<std::string, Measure> functions = {
      {"product", Measure::kNumeric},
      {"any", Measure::kBoolean},
      {"all", Measure::kBoolean},
      {"count_all", Measure::kCountRows},
      {"quantile_sketch", Measure::kSketch},
  };
  return functions;
}

std::optional<Measure> MeasureOf(const std::string& name) {
  for (const auto* functions : {&AggregateFunctions(), &PartialStateFunctions()}) {
    auto found = functions->find(name);
    if (found != functions->end()) return found->second;
  }
  return std::nullopt;
}

arrow::Status Mistyped(const std::string& function, const char* expected) {
  return Error(ErrorCode::kInvalidRequest, "function '", function, "' expects ", expected);
}

arrow::Status CheckFamily(const std::string& name, Family family,
                          const std::vector<TypeClass>& arguments, TypeClass output) {
  auto count = arguments.size();
  auto all = [&](auto predicate) {
    for (auto argument : arguments) {
      if (!predicate(argument)) return false;
    }
    return true;
  };
  auto is = [](TypeClass wanted) { return [wanted](TypeClass c) { return c == wanted; }; };
  switch (family) {
    case Family::kComparison:
      if (count != 2 || !Comparable(arguments[0], arguments[1])) {
        return Mistyped(name, "two arguments of comparable types");
      }
      break;
    case Family::kLogical:
      if (count != 2 || !all(is(TypeClass::kBoolean))) return Mistyped(name, "two booleans");
      break;
    case Family::kNot:
      if (count != 1 || !all(is(TypeClass::kBoolean))) return Mistyped(name, "one boolean");
      break;
    case Family::kNullCheck:
      if (count != 1) return Mistyped(name, "one argument");
      break;
    case Family::kFloatCheck:
      if (count != 1 || !all(is(TypeClass::kFloating))) {
        return Mistyped(name, "one floating-point argument");
      }
      break;
    case Family::kArithmetic:
    case Family::kUnaryArithmetic:
      if (count != (family == Family::kArithmetic ? 2u : 1u) || !all(IsNumeric) ||
          !IsNumeric(output)) {
        return Mistyped(name, "numbers and to return a number");
      }
      return arrow::Status::OK();
    case Family::kStringMatch:
      if (count != 2 || !all(is(TypeClass::kText))) return Mistyped(name, "two strings");
      break;
  }
  if (output != TypeClass::kBoolean) return Mistyped(name, "to return a boolean");
  return arrow::Status::OK();
}

arrow::Status CheckOptions(const google::protobuf::RepeatedPtrField<sp::FunctionOption>& options) {
  if (options.size() > 8) return Reject("more than 8 function options");
  for (const auto& option : options) {
    ARROW_RETURN_NOT_OK(OnlyFields(option, {"name", "preference"}));
    if (option.name().size() > 64 || option.preference_size() > 8) {
      return Reject("an oversized function option");
    }
    for (const auto& preference : option.preference()) {
      if (preference.size() > 64) return Reject("an oversized function option");
    }
  }
  return arrow::Status::OK();
}

template <typename Setter>
sp::Type TypeOf(Setter set) {
  sp::Type type;
  set(&type);
  return type;
}

}  // namespace

arrow::Result<std::string> ExpressionChecker::FunctionName(uint32_t anchor) const {
  auto found = declared_.functions.find(anchor);
  if (found == declared_.functions.end()) {
    return Reject("function anchor ", anchor, " is not declared");
  }
  return found->second;
}

arrow::Result<sp::Type> ExpressionChecker::Check(const sp::Expression& expression,
                                                 const std::vector<sp::Type>& input,
                                                 int depth) const {
  ARROW_RETURN_NOT_OK(budget_->VisitExpression(depth));
  ARROW_RETURN_NOT_OK(NoUnknownFields(expression));
  switch (expression.rex_type_case()) {
    case Rex::kLiteral:
      return CheckLiteral(expression.literal(), depth + 1);
    case Rex::kSelection:
      return CheckFieldReference(expression.selection(), input);
    case Rex::kScalarFunction:
      return CheckScalarFunction(expression.scalar_function(), input, depth + 1);
    case Rex::kCast: {
      const auto& cast = expression.cast();
      ARROW_RETURN_NOT_OK(OnlyFields(cast, {"type", "input", "failure_behavior"}));
      if (!sp::Expression::Cast::FailureBehavior_IsValid(cast.failure_behavior())) {
        return Reject("an invalid cast failure behaviour");
      }
      ARROW_RETURN_NOT_OK(CheckType(cast.type(), declared_, budget_, depth + 1));
      ARROW_ASSIGN_OR_RAISE(auto from, Check(cast.input(), input, depth + 1));
      if (ClassOf(from, declared_) == TypeClass::kNested ||
          ClassOf(cast.type(), declared_) == TypeClass::kNested) {
        return Reject("casts of nested types");
      }
      return cast.type();
    }
    case Rex::kSingularOrList: {
      const auto& in_list = expression.singular_or_list();
      ARROW_RETURN_NOT_OK(OnlyFields(in_list, {"value", "options"}));
      if (in_list.options_size() < 1 || in_list.options_size() > Limits::kMaxInListLength) {
        return Reject("an IN list of ", in_list.options_size(), " values (1..",
                      Limits::kMaxInListLength, ")");
      }
      ARROW_RETURN_NOT_OK(budget_->AddInValues(in_list.options_size()));
      ARROW_ASSIGN_OR_RAISE(auto value, Check(in_list.value(), input, depth + 1));
      auto value_class = ClassOf(value, declared_);
      for (const auto& option : in_list.options()) {
        if (!option.has_literal()) return Reject("IN list values must be literals");
        ARROW_ASSIGN_OR_RAISE(auto type, Check(option, input, depth + 1));
        if (!Comparable(value_class, ClassOf(type, declared_))) {
          return Error(ErrorCode::kInvalidRequest,
                       "IN list values must have the type of the value");
        }
      }
      return BooleanType();
    }
    default:
      return Reject("expression kind ", static_cast<int>(expression.rex_type_case()),
                    " is not supported in storage");
  }
}

arrow::Status ExpressionChecker::CheckCondition(const sp::Expression& expression,
                                                const std::vector<sp::Type>& input) const {
  ARROW_ASSIGN_OR_RAISE(auto type, Check(expression, input));
  if (ClassOf(type, declared_) != TypeClass::kBoolean) {
    return Error(ErrorCode::kInvalidRequest, "a filter must be a boolean expression");
  }
  return arrow::Status::OK();
}

arrow::Result<sp::Type> ExpressionChecker::CheckFieldReference(
    const sp::Expression::FieldReference& reference, const std::vector<sp::Type>& input) const {
  ARROW_RETURN_NOT_OK(OnlyFields(reference, {"direct_reference", "root_reference"}));
  if (!reference.has_root_reference() || !reference.has_direct_reference()) {
    return Reject("field references other than direct references to the input");
  }
  ARROW_RETURN_NOT_OK(OnlyFields(reference.root_reference(), {}));
  const auto& segment = reference.direct_reference();
  ARROW_RETURN_NOT_OK(OnlyFields(segment, {"struct_field"}));
  if (!segment.has_struct_field()) return Reject("references into lists or maps");
  ARROW_RETURN_NOT_OK(OnlyFields(segment.struct_field(), {"field"}));  // no nested child
  int32_t field = segment.struct_field().field();
  if (field < 0 || static_cast<size_t>(field) >= input.size()) {
    return Error(ErrorCode::kInvalidRequest, "field reference ", field,
                 " is out of range: the input has ", input.size(), " columns");
  }
  return input[field];
}

arrow::Result<std::vector<sp::Type>> ExpressionChecker::CheckArguments(
    const google::protobuf::RepeatedPtrField<sp::FunctionArgument>& arguments,
    const std::vector<sp::Type>& input, int depth) const {
  if (arguments.size() > 16) return Reject("a function with more than 16 arguments");
  std::vector<sp::Type> types;
  for (const auto& argument : arguments) {
    ARROW_RETURN_NOT_OK(OnlyFields(argument, {"value"}));
    if (!argument.has_value()) return Reject("function arguments other than values");
    ARROW_ASSIGN_OR_RAISE(auto type, Check(argument.value(), input, depth + 1));
    types.push_back(std::move(type));
  }
  return types;
}

arrow::Result<sp::Type> ExpressionChecker::CheckScalarFunction(
    const sp::Expression::ScalarFunction& function, const std::vector<sp::Type>& input,
    int depth) const {
  ARROW_RETURN_NOT_OK(
      OnlyFields(function, {"function_reference", "arguments", "output_type", "options"}));
  ARROW_ASSIGN_OR_RAISE(auto name, FunctionName(function.function_reference()));
  auto family = ScalarFunctions().find(name);
  if (family == ScalarFunctions().end()) {
    return Error(ErrorCode::kInvalidRequest, "function '", name.substr(0, 64),
                 "' is not allowed in storage");
  }
  if (!function.has_output_type()) return Reject("function '", name, "' without an output type");
  ARROW_RETURN_NOT_OK(CheckType(function.output_type(), declared_, budget_, depth));
  ARROW_RETURN_NOT_OK(CheckOptions(function.options()));
  ARROW_ASSIGN_OR_RAISE(auto arguments, CheckArguments(function.arguments(), input, depth));
  std::vector<TypeClass> classes;
  for (const auto& argument : arguments) classes.push_back(ClassOf(argument, declared_));
  ARROW_RETURN_NOT_OK(
      CheckFamily(name, family->second, classes, ClassOf(function.output_type(), declared_)));
  return function.output_type();
}

arrow::Result<sp::Type> ExpressionChecker::CheckMeasure(const sp::AggregateFunction& function,
                                                        const std::vector<sp::Type>& input) const {
  ARROW_RETURN_NOT_OK(budget_->VisitExpression(0));
  ARROW_RETURN_NOT_OK(OnlyFields(function, {"function_reference", "arguments", "output_type",
                                            "phase", "invocation", "options"}));
  ARROW_ASSIGN_OR_RAISE(auto name, FunctionName(function.function_reference()));
  auto kind = MeasureOf(name);
  if (!kind) {
    return Error(ErrorCode::kInvalidRequest, "aggregate function '", name.substr(0, 64),
                 "' is not allowed in storage");
  }
  // Arrow's consumer runs complete aggregates only.
  if (function.phase() != sp::AGGREGATION_PHASE_INITIAL_TO_RESULT) {
    return Reject("aggregation phases other than initial-to-result");
  }
  if (function.invocation() != sp::AggregateFunction::AGGREGATION_INVOCATION_UNSPECIFIED &&
      function.invocation() != sp::AggregateFunction::AGGREGATION_INVOCATION_ALL) {
    return Reject("DISTINCT aggregates");
  }
  if (!function.has_output_type()) return Reject("aggregate '", name, "' without an output type");
  ARROW_RETURN_NOT_OK(CheckType(function.output_type(), declared_, budget_, 1));
  ARROW_RETURN_NOT_OK(CheckOptions(function.options()));
  ARROW_ASSIGN_OR_RAISE(auto arguments, CheckArguments(function.arguments(), input, 1));
  bool fits = false;
  auto output = ClassOf(function.output_type(), declared_);
  auto argument = arguments.empty() ? TypeClass::kOther : ClassOf(arguments[0], declared_);
  switch (*kind) {
    case Measure::kCount:
      fits = arguments.size() <= 1 && output == TypeClass::kInteger;
      break;
    case Measure::kCountRows:
      fits = arguments.size() == 1 && output == TypeClass::kInteger;
      break;
    case Measure::kNumeric:
      fits = arguments.size() == 1 && IsNumeric(argument) && IsNumeric(output);
      break;
    case Measure::kBoolean:
      fits =
          arguments.size() == 1 && argument == TypeClass::kBoolean && output == TypeClass::kBoolean;
      break;
    case Measure::kSketch:  // a list of float64 quantiles per group
      fits = arguments.size() == 1 &&
             (argument == TypeClass::kInteger || argument == TypeClass::kFloating) &&
             function.output_type().has_list() && function.output_type().list().type().has_fp64();
      break;
    case Measure::kOrdered:
      fits = arguments.size() == 1 && Comparable(argument, argument) &&
             SameType(arguments[0], function.output_type());
      break;
    case Measure::kAny:
      fits = arguments.size() == 1 && SameType(arguments[0], function.output_type());
      break;
  }
  if (!fits) return Mistyped(name, "arguments and an output type that fit it");
  return function.output_type();
}

arrow::Result<sp::Type> ExpressionChecker::CheckLiteral(const sp::Expression::Literal& literal,
                                                        int depth) const {
  ARROW_RETURN_NOT_OK(
      OnlyFields(literal, {"nullable", "type_variation_reference"}, "literal_type"));
  if (literal.type_variation_reference() != 0) return Reject("type variations");
  auto bytes_within_limit = [](const std::string& value) {
    return static_cast<int64_t>(value.size()) <= Limits::kMaxLiteralBytes;
  };
  switch (literal.literal_type_case()) {
    case LiteralKind::kBoolean:
      return TypeOf([](sp::Type* t) { t->mutable_bool_(); });
    case LiteralKind::kI8:
      return TypeOf([](sp::Type* t) { t->mutable_i8(); });
    case LiteralKind::kI16:
      return TypeOf([](sp::Type* t) { t->mutable_i16(); });
    case LiteralKind::kI32:
      return TypeOf([](sp::Type* t) { t->mutable_i32(); });
    case LiteralKind::kI64:
      return TypeOf([](sp::Type* t) { t->mutable_i64(); });
    case LiteralKind::kFp32:
      return TypeOf([](sp::Type* t) { t->mutable_fp32(); });
    case LiteralKind::kFp64:
      return TypeOf([](sp::Type* t) { t->mutable_fp64(); });
    case LiteralKind::kDate:
      return TypeOf([](sp::Type* t) { t->mutable_date(); });
    case LiteralKind::kTime:
      return TypeOf([](sp::Type* t) { t->mutable_time(); });
    // The deprecated timestamp literals hold microseconds.
    case LiteralKind::kTimestamp:
      return TypeOf([](sp::Type* t) { t->mutable_precision_timestamp()->set_precision(6); });
    case LiteralKind::kTimestampTz:
      return TypeOf([](sp::Type* t) { t->mutable_precision_timestamp_tz()->set_precision(6); });
    case LiteralKind::kString:
      if (!bytes_within_limit(literal.string())) return Reject("a string literal too long");
      return TypeOf([](sp::Type* t) { t->mutable_string(); });
    case LiteralKind::kBinary:
      if (!bytes_within_limit(literal.binary())) return Reject("a binary literal too long");
      return TypeOf([](sp::Type* t) { t->mutable_binary(); });
    case LiteralKind::kFixedChar: {
      const auto& value = literal.fixed_char();
      if (value.empty() || !bytes_within_limit(value)) return Reject("a fixed char literal");
      return TypeOf([&](sp::Type* t) { t->mutable_fixed_char()->set_length(value.size()); });
    }
    case LiteralKind::kVarChar: {
      const auto& varchar = literal.var_char();
      ARROW_RETURN_NOT_OK(OnlyFields(varchar, {"value", "length"}));
      if (varchar.length() < 1 || varchar.length() > Limits::kMaxLiteralBytes ||
          varchar.value().size() > varchar.length()) {
        return Reject("a varchar literal longer than its length");
      }
      return TypeOf([&](sp::Type* t) { t->mutable_varchar()->set_length(varchar.length()); });
    }
    case LiteralKind::kFixedBinary: {
      const auto& value = literal.fixed_binary();
      if (value.empty() || !bytes_within_limit(value)) return Reject("a fixed binary literal");
      return TypeOf([&](sp::Type* t) { t->mutable_fixed_binary()->set_length(value.size()); });
    }
    case LiteralKind::kDecimal: {
      const auto& decimal = literal.decimal();
      ARROW_RETURN_NOT_OK(OnlyFields(decimal, {"value", "precision", "scale"}));
      auto type = TypeOf([&](sp::Type* t) {
        t->mutable_decimal()->set_precision(decimal.precision());
        t->mutable_decimal()->set_scale(decimal.scale());
      });
      ARROW_RETURN_NOT_OK(CheckType(type, declared_, budget_, depth));
      if (decimal.value().size() != 16) return Reject("a decimal literal not of 16 bytes");
      return type;
    }
    case LiteralKind::kPrecisionTimestamp:
    case LiteralKind::kPrecisionTimestampTz: {
      bool zoned = literal.literal_type_case() == LiteralKind::kPrecisionTimestampTz;
      const auto& value = zoned ? literal.precision_timestamp_tz() : literal.precision_timestamp();
      ARROW_RETURN_NOT_OK(OnlyFields(value, {"precision", "value"}));
      auto type = TypeOf([&](sp::Type* t) {
        if (zoned) {
          t->mutable_precision_timestamp_tz()->set_precision(value.precision());
        } else {
          t->mutable_precision_timestamp()->set_precision(value.precision());
        }
      });
      ARROW_RETURN_NOT_OK(CheckType(type, declared_, budget_, depth));
      return type;
    }
    case LiteralKind::kNull:
      ARROW_RETURN_NOT_OK(CheckType(literal.null(), declared_, budget_, depth));
      return literal.null();
    case LiteralKind::kEmptyList: {
      auto type = TypeOf([&](sp::Type* t) { *t->mutable_list() = literal.empty_list(); });
      ARROW_RETURN_NOT_OK(CheckType(type, declared_, budget_, depth));
      return type;
    }
    case LiteralKind::kList: {
      const auto& values = literal.list().values();
      ARROW_RETURN_NOT_OK(OnlyFields(literal.list(), {"values"}));
      if (values.empty() || values.size() > Limits::kMaxListLength) {
        return Reject("a list literal of ", values.size(), " values (1..", Limits::kMaxListLength,
                      ")");
      }
      ARROW_ASSIGN_OR_RAISE(auto element, CheckLiteral(values[0], depth + 1));
      for (const auto& value : values) {
        ARROW_RETURN_NOT_OK(budget_->Visit(depth + 1));
        ARROW_ASSIGN_OR_RAISE(auto type, CheckLiteral(value, depth + 1));
        if (!SameType(type, element)) return Reject("a list literal of mixed types");
      }
      return TypeOf([&](sp::Type* t) { *t->mutable_list()->mutable_type() = element; });
    }
    case LiteralKind::kUserDefined: {
      // Arrow's own literals (unsigned integers, half floats): a declared type
      // and a small packed value.
      const auto& defined = literal.user_defined();
      ARROW_RETURN_NOT_OK(OnlyFields(defined, {"type_reference", "value"}));
      if (!declared_.types.count(defined.type_reference())) {
        return Reject("user-defined type ", defined.type_reference(), " is not declared");
      }
      if (defined.value().value().size() > 64 || defined.value().type_url().size() > 256) {
        return Reject("an oversized user-defined literal");
      }
      return TypeOf([&](sp::Type* t) {
        t->mutable_user_defined()->set_type_reference(defined.type_reference());
      });
    }
    default:
      return Reject("literal kind ", static_cast<int>(literal.literal_type_case()),
                    " is not supported in storage");
  }
}

}  // namespace skyhook::substrait_check
