// Checks of Substrait expressions and aggregate measures over an input of
// known column types: every field reference in range, every literal of a
// valid type and bounded size, every function on the allowlist with argument
// and result types that fit it. Returns each expression's type, so callers
// check that a filter is boolean and know the width and types of what a
// relation outputs.
#pragma once

#include <vector>

#include <arrow/result.h>

#include "proto/algebra.pb.h"
#include "skyhook/substrait/type_check.h"

namespace skyhook::substrait_check {

class ExpressionChecker {
 public:
  ExpressionChecker(const Declarations& declared, Budget* budget)
      : declared_(declared), budget_(budget) {}

  arrow::Result<sp::Type> Check(const sp::Expression& expression,
                                const std::vector<sp::Type>& input, int depth = 0) const;

  /// A filter condition: a checked expression of boolean type.
  arrow::Status CheckCondition(const sp::Expression& expression,
                               const std::vector<sp::Type>& input) const;

  /// An aggregate measure; returns its output type.
  arrow::Result<sp::Type> CheckMeasure(const sp::AggregateFunction& function,
                                       const std::vector<sp::Type>& input) const;

 private:
  arrow::Result<sp::Type> CheckLiteral(const sp::Expression::Literal& literal, int depth) const;
  arrow::Result<sp::Type> CheckFieldReference(const sp::Expression::FieldReference& reference,
                                              const std::vector<sp::Type>& input) const;
  arrow::Result<sp::Type> CheckScalarFunction(const sp::Expression::ScalarFunction& function,
                                              const std::vector<sp::Type>& input, int depth) const;
  arrow::Result<std::vector<sp::Type>> CheckArguments(
      const google::protobuf::RepeatedPtrField<sp::FunctionArgument>& arguments,
      const std::vector<sp::Type>& input, int depth) const;
  arrow::Result<std::string> FunctionName(uint32_t anchor) const;

  const Declarations& declared_;
  Budget* budget_;
};

}  // namespace skyhook::substrait_check
