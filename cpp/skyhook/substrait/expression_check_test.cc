#include "skyhook/substrait/expression_check.h"

#include <string>
#include <vector>

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "skyhook/errors/error.h"

namespace skyhook::substrait_check {
namespace {

// An input of two columns, a: i64 and b: string; functions declared as the
// client declares them.
class Expressions : public testing::Test {
 protected:
  void SetUp() override {
    declared_.functions = {{1, "gt"},  {2, "add"}, {3, "starts_with"},
                           {4, "sum"}, {5, "and"}, {6, "power"}};
    input_ = {Type("i64 {}"), Type("string {}")};
  }

  static sp::Type Type(const std::string& text) {
    sp::Type type;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &type)) << text;
    return type;
  }

  static sp::Expression Expression(const std::string& text) {
    sp::Expression expression;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &expression)) << text;
    return expression;
  }

  arrow::Result<sp::Type> Check(const std::string& text) {
    Budget budget;
    return ExpressionChecker(declared_, &budget).Check(Expression(text), input_);
  }

  arrow::Status Condition(const std::string& text) {
    Budget budget;
    return ExpressionChecker(declared_, &budget).CheckCondition(Expression(text), input_);
  }

  static void ExpectRejected(const arrow::Status& status, const std::string& says) {
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(CodeOf(status), ErrorCode::kInvalidRequest) << status.ToString();
    EXPECT_NE(status.message().find(says), std::string::npos) << status.ToString();
  }

  Declarations declared_;
  std::vector<sp::Type> input_;
};

std::string Field(int index) {
  return "selection { direct_reference { struct_field { field: " + std::to_string(index) +
         " } } root_reference {} }";
}

std::string Call(int anchor, const std::string& output, const std::vector<std::string>& arguments) {
  std::string text = "scalar_function { function_reference: " + std::to_string(anchor) +
                     " output_type { " + output + " }";
  for (const auto& argument : arguments) text += " arguments { value { " + argument + " } }";
  return text + " }";
}

TEST_F(Expressions, AComparisonOfAColumnAndALiteralIsBoolean) {
  auto type = Check(Call(1, "bool {}", {Field(0), "literal { i64: 5 }"}));
  ASSERT_TRUE(type.ok()) << type.status().ToString();
  EXPECT_EQ(type->kind_case(), sp::Type::kBool);
  EXPECT_TRUE(Condition(Call(1, "bool {}", {Field(0), "literal { i64: 5 }"})).ok());
}

TEST_F(Expressions, ReferencesOutsideTheInputAreRefused) {
  EXPECT_TRUE(Check(Field(1)).ok());
  EXPECT_FALSE(Check(Field(2)).ok());
  EXPECT_FALSE(Check(Field(-1)).ok());
}

TEST_F(Expressions, OnlyDeclaredFunctionsOfTheAllowlistRun) {
  ExpectRejected(Check(Call(9, "bool {}", {Field(0), Field(0)})).status(), "not declared");
  // power is declared but not on the allowlist.
  EXPECT_FALSE(Check(Call(6, "i64 {}", {Field(0), "literal { i64: 2 }"})).ok());
}

TEST_F(Expressions, ArgumentsMustFitTheFunction) {
  EXPECT_TRUE(Check(Call(2, "i64 {}", {Field(0), "literal { i64: 1 }"})).ok());
  EXPECT_FALSE(Check(Call(2, "i64 {}", {Field(0), Field(1)})).ok());  // a number plus text
  EXPECT_TRUE(Check(Call(3, "bool {}", {Field(1), "literal { string: \"ab\" }"})).ok());
  EXPECT_FALSE(Check(Call(3, "bool {}", {Field(0), "literal { string: \"ab\" }"})).ok());
  ExpectRejected(Check("scalar_function { function_reference: 1 arguments { value { " + Field(0) +
                       " } } arguments { value { literal { i64: 5 } } } }")
                     .status(),
                 "without an output type");
}

TEST_F(Expressions, AFilterMustBeBoolean) {
  EXPECT_FALSE(Condition(Field(0)).ok());
  EXPECT_FALSE(Condition(Call(2, "i64 {}", {Field(0), "literal { i64: 1 }"})).ok());
}

TEST_F(Expressions, LiteralsAreBounded) {
  ExpectRejected(Check("literal { decimal { value: \"short\" precision: 10 scale: 2 } }").status(),
                 "16 bytes");
  ExpectRejected(
      Check("literal { decimal { value: \"0123456789abcdef\" precision: 50 scale: 2 } }").status(),
      "precision");
  ExpectRejected(
      Check("literal { string: \"" + std::string(Limits::kMaxLiteralBytes + 1, 'x') + "\" }")
          .status(),
      "too long");
}

TEST_F(Expressions, InListsAreBoundedAndOfLiterals) {
  std::string in = "singular_or_list { value { " + Field(0) + " }";
  for (int value = 0; value < 3; ++value)
    in += " options { literal { i64: " + std::to_string(value) + " } }";
  EXPECT_TRUE(Check(in + " }").ok());
  ExpectRejected(
      Check("singular_or_list { value { " + Field(0) + " } options { " + Field(0) + " } }")
          .status(),
      "must be literals");
  std::string long_list = "singular_or_list { value { " + Field(0) + " }";
  for (int value = 0; value <= Limits::kMaxInListLength; ++value) {
    long_list += " options { literal { i64: " + std::to_string(value) + " } }";
  }
  ExpectRejected(Check(long_list + " }").status(), "IN list");
}

TEST_F(Expressions, NestingDeeperThanTheLimitIsRefused) {
  std::string deep = Field(0);
  for (int depth = 0; depth <= Limits::kMaxDepth; ++depth) {
    deep = Call(2, "i64 {}", {deep, "literal { i64: 1 }"});
  }
  EXPECT_FALSE(Check(deep).ok());
}

TEST_F(Expressions, MeasuresTakeTheTypesTheirFunctionAccepts) {
  Budget budget;
  ExpressionChecker checker(declared_, &budget);
  sp::AggregateFunction sum;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "function_reference: 4 output_type { i64 {} } phase: AGGREGATION_PHASE_INITIAL_TO_RESULT "
      "arguments { value { " +
          Field(0) + " } }",
      &sum));
  EXPECT_TRUE(checker.CheckMeasure(sum, input_).ok());
  sum.mutable_arguments(0)->mutable_value()->CopyFrom(Expression(Field(1)));
  EXPECT_FALSE(checker.CheckMeasure(sum, input_).ok());  // the sum of text
  sum.mutable_arguments(0)->mutable_value()->CopyFrom(Expression(Field(0)));
  sum.set_invocation(sp::AggregateFunction::AGGREGATION_INVOCATION_DISTINCT);
  ExpectRejected(checker.CheckMeasure(sum, input_).status(), "DISTINCT");
}

}  // namespace
}  // namespace skyhook::substrait_check
