#include "skyhook/substrait/request_check.h"

#include <string>
#include <utility>

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "proto/extended_expression.pb.h"
#include "proto/plan.pb.h"
#include "skyhook/errors/error.h"

namespace skyhook::substrait_check {
namespace {

// Requests written as the client writes them, over an object of two columns
// (a: i64, b: string), in protobuf's text format.
constexpr char kExtensions[] = R"(
  extension_uris { extension_uri_anchor: 1 uri: "functions_comparison.yaml" }
  extension_uris { extension_uri_anchor: 2 uri: "functions_arithmetic.yaml" }
  extensions { extension_function { extension_uri_reference: 1 function_anchor: 1 name: "gt:any_any" } }
  extensions { extension_function { extension_uri_reference: 2 function_anchor: 2 name: "sum:i64" } }
  extensions { extension_function { extension_uri_reference: 2 function_anchor: 3 name: "power:i64_i64" } }
)";
constexpr char kSchema[] = R"(
  base_schema { names: "a" names: "b" struct { types { i64 {} } types { string {} } } }
)";
constexpr char kColumnA[] =
    "selection { direct_reference { struct_field { field: 0 } } root_reference {} }";

std::string Read(const std::string& table = "object") {
  return std::string("read { ") + kSchema + " named_table { names: \"" + table + "\" } }";
}

std::string GreaterThan(const std::string& left, const std::string& right) {
  return "scalar_function { function_reference: 1 output_type { bool {} } arguments { value { " +
         left + " } } arguments { value { " + right + " } } }";
}

std::string Filter(const std::string& input, const std::string& condition) {
  return "filter { input { " + input + " } condition { " + condition + " } }";
}

// Emits only the projected columns, as the client's plans do.
std::string Project(const std::string& input, const std::string& expression, int emit = 2) {
  return "project { common { emit { output_mapping: " + std::to_string(emit) + " } } input { " +
         input + " } expressions { " + expression + " } }";
}

std::string MeasureOfFirstColumnByItself(const std::string& input, int function,
                                         const std::string& output_type) {
  return "aggregate { input { " + input + " } groupings { grouping_expressions { " + kColumnA +
         " } } measures { measure { function_reference: " + std::to_string(function) +
         " phase: AGGREGATION_PHASE_INITIAL_TO_RESULT output_type { " + output_type +
         " } arguments { value { " + kColumnA + " } } } } }";
}

std::string SumOfFirstColumnByItself(const std::string& input) {
  return MeasureOfFirstColumnByItself(input, 2, "i64 {}");
}

std::string Plan(const std::string& root_input, const std::string& names,
                 const std::string& extensions = "") {
  proto::Plan plan;
  auto text = std::string(kExtensions) + extensions + " relations { root { input { " + root_input +
              " } " + names + " } }";
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &plan)) << text;
  return plan.SerializeAsString();
}

std::string Expressions(const std::string& referred) {
  proto::ExtendedExpression message;
  auto text = std::string(kExtensions) + kSchema + referred;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &message)) << text;
  return message.SerializeAsString();
}

void ExpectRefused(const arrow::Status& status, const std::string& reason = "") {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(CodeOf(status), ErrorCode::kInvalidRequest) << status;
  EXPECT_NE(status.message().find(reason), std::string::npos) << status;
}

const std::string kLiteral = "literal { i64: 5 }";

TEST(CheckPlan, AcceptsProjectOverRead) {
  auto checked = CheckPlan(Plan(Project(Read(), kColumnA), "names: \"a\""));
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_FALSE(checked->has_aggregate);
}

TEST(CheckPlan, AcceptsProjectOverFilterOverRead) {
  auto filtered = Filter(Read(), GreaterThan(kColumnA, kLiteral));
  auto checked = CheckPlan(Plan(Project(filtered, kColumnA), "names: \"a\""));
  ASSERT_TRUE(checked.ok()) << checked.status();
}

TEST(CheckPlan, AcceptsAnAggregateAndSplitsItsInput) {
  auto filtered = Filter(Read(), GreaterThan(kColumnA, kLiteral));
  auto checked = CheckPlan(
      Plan(SumOfFirstColumnByItself(Project(filtered, kColumnA)), "names: \"a\" names: \"sum\""));
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_TRUE(checked->has_aggregate);
  // The input plan is the same plan with the aggregate's project as its relation.
  proto::Plan input;
  ASSERT_TRUE(input.ParseFromString(checked->input_plan));
  ASSERT_EQ(input.relations_size(), 1);
  EXPECT_TRUE(input.relations(0).rel().project().input().has_filter());
  EXPECT_EQ(input.extensions_size(), 3);
}

// One of skyhook's partial-state measures (storage/methods/partial_measures.h)
// over column a (i64), by itself.
std::string PartialState(const std::string& name, const std::string& output_type) {
  auto extensions =
      "extension_uris { extension_uri_anchor: 3 uri: \"urn:skyhook:partial_measures\" } "
      "extensions { extension_function { extension_uri_reference: 3 function_anchor: 4 name: \"" +
      name + "\" } }";
  return Plan(MeasureOfFirstColumnByItself(Project(Read(), kColumnA), 4, output_type),
              "names: \"a\" names: \"m\"", extensions);
}

TEST(CheckPlan, TypesSkyhooksPartialStateMeasures) {
  for (const auto& [name, type] : {std::pair{"product", "i64 {}"},
                                   {"count_all", "i64 {}"},
                                   {"quantile_sketch", "list { type { fp64 {} } }"}}) {
    auto checked = CheckPlan(PartialState(name, type));
    EXPECT_TRUE(checked.ok()) << name << ": " << checked.status();
  }
  ExpectRefused(CheckPlan(PartialState("any", "bool {}")).status(), "'any' expects");
  ExpectRefused(CheckPlan(PartialState("product", "string {}")).status(), "'product' expects");
  ExpectRefused(CheckPlan(PartialState("quantile_sketch", "fp64 {}")).status(), "expects");
  ExpectRefused(CheckPlan(PartialState("quantile_sketch", "list { type { string {} } }")).status(),
                "expects");
  ExpectRefused(CheckPlan(PartialState("median", "fp64 {}")).status(),
                "'median' is not allowed in storage");
}

TEST(CheckPlan, RefusesOtherShapes) {
  ExpectRefused(CheckPlan(Plan(Read(), "names: \"a\" names: \"b\"")).status(), "expected");
  ExpectRefused(
      CheckPlan(Plan(Filter(Read(), GreaterThan(kColumnA, kLiteral)), "names: \"a\" names: \"b\""))
          .status(),
      "expected");
  auto projected = Project(Read(), kColumnA);
  ExpectRefused(CheckPlan(Plan(Project(projected, kColumnA, 1), "names: \"a\"")).status(),
                "expected");
  ExpectRefused(
      CheckPlan(Plan(SumOfFirstColumnByItself(SumOfFirstColumnByItself(projected)), "names: \"a\""))
          .status(),
      "expected");
}

TEST(CheckPlan, RefusesReadingAnythingButTheObject) {
  ExpectRefused(CheckPlan(Plan(Project(Read("lineitem"), kColumnA), "names: \"a\"")).status(),
                "named table 'object'");
}

TEST(CheckPlan, RefusesMoreThanOneRelation) {
  proto::Plan plan;
  ASSERT_TRUE(plan.ParseFromString(Plan(Project(Read(), kColumnA), "names: \"a\"")));
  *plan.add_relations() = plan.relations(0);
  ExpectRefused(CheckPlan(plan.SerializeAsString()).status(), "exactly one relation");
}

TEST(CheckPlan, RefusesWrongNamesAndEmits) {
  ExpectRefused(CheckPlan(Plan(Project(Read(), kColumnA), "names: \"a\" names: \"b\"")).status(),
                "names 2 output columns of 1");
  ExpectRefused(CheckPlan(Plan(Project(Read(), kColumnA, 3), "names: \"a\"")).status(),
                "emit index 3 is out of range");
}

TEST(CheckPlan, RefusesConditionsThatAreNotBoolean) {
  auto filtered = Filter(Read(), kColumnA);
  ExpectRefused(CheckPlan(Plan(Project(filtered, kColumnA), "names: \"a\"")).status(), "boolean");
}

TEST(CheckPlan, RefusesFunctionsOutsideTheAllowlist) {
  auto power =
      "scalar_function { function_reference: 3 output_type { i64 {} } arguments { value { " +
      std::string(kColumnA) + " } } arguments { value { " + kLiteral + " } } }";
  ExpectRefused(CheckPlan(Plan(Project(Read(), power), "names: \"p\"")).status(),
                "'power' is not allowed");
}

TEST(CheckPlan, RefusesInvalidTypesAndBytes) {
  auto decimal = "literal { decimal { value: \"0000000000000000\" precision: 0 scale: 0 } }";
  ExpectRefused(CheckPlan(Plan(Project(Read(), decimal), "names: \"d\"")).status());
  ExpectRefused(CheckPlan("\xff\xff\xff not protobuf").status());
}

TEST(CheckExtendedExpression, AcceptsAFilterAndProjections) {
  auto filter = Expressions("referred_expr { expression { " + GreaterThan(kColumnA, kLiteral) +
                            " } output_names: \"f\" }");
  EXPECT_TRUE(CheckExtendedExpression(filter, ExpressionRole::kFilter).ok());
  auto projection = Expressions("referred_expr { expression { " + std::string(kColumnA) +
                                " } output_names: \"a\" } referred_expr { expression { " +
                                kLiteral + " } output_names: \"five\" }");
  EXPECT_TRUE(CheckExtendedExpression(projection, ExpressionRole::kProjection).ok());
}

TEST(CheckExtendedExpression, RefusesFiltersThatAreNotOneBooleanExpression) {
  auto not_boolean = Expressions("referred_expr { expression { " + std::string(kColumnA) +
                                 " } output_names: \"a\" }");
  ExpectRefused(CheckExtendedExpression(not_boolean, ExpressionRole::kFilter).status(), "boolean");
  auto condition = "referred_expr { expression { " + GreaterThan(kColumnA, kLiteral) +
                   " } output_names: \"f\" }";
  ExpectRefused(
      CheckExtendedExpression(Expressions(condition + condition), ExpressionRole::kFilter).status(),
      "exactly one");
}

TEST(CheckExtendedExpression, RefusesReferencesOutOfRange) {
  auto reference =
      "referred_expr { expression { selection { direct_reference { struct_field { "
      "field: 2 } } root_reference {} } } output_names: \"c\" }";
  ExpectRefused(
      CheckExtendedExpression(Expressions(reference), ExpressionRole::kProjection).status(),
      "out of range");
}

TEST(CheckExtendedExpression, CountsTheNodesEvaluatedPerRow) {
  auto filter = Expressions("referred_expr { expression { " + GreaterThan(kColumnA, kLiteral) +
                            " } output_names: \"f\" }");
  auto nodes = CheckExtendedExpression(filter, ExpressionRole::kFilter);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ(*nodes, 3);  // the comparison, the column and the literal
}

// An IN list of `values` values over column a, as one projection.
std::string InList(int values) {
  std::string options;
  for (int i = 0; i < values; ++i)
    options += "options { literal { i64: " + std::to_string(i) + " } } ";
  return "referred_expr { expression { singular_or_list { value { " + std::string(kColumnA) +
         " } " + options + "} } output_names: \"in\" }";
}

TEST(CheckExtendedExpression, BoundsInListValuesAcrossLists) {
  auto two_thousand = CheckExtendedExpression(Expressions(InList(1000) + InList(1000)),
                                              ExpressionRole::kProjection);
  ASSERT_TRUE(two_thousand.ok()) << two_thousand.status();
  EXPECT_EQ(*two_thousand, 2 * (1 + 1 + 1000));
  ExpectRefused(CheckExtendedExpression(Expressions(InList(1000) + InList(1000) + InList(1)),
                                        ExpressionRole::kProjection)
                    .status(),
                "2000 values in all");
}

}  // namespace
}  // namespace skyhook::substrait_check
