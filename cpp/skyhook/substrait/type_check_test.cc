#include "skyhook/substrait/type_check.h"

#include <string>

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "proto/extended_expression.pb.h"
#include "skyhook/errors/error.h"

namespace skyhook::substrait_check {
namespace {

sp::Type TypeOf(const std::string& text) {
  sp::Type type;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &type)) << text;
  return type;
}

arrow::Status Check(const std::string& text, const Declarations& declared = {}) {
  Budget budget;
  return CheckType(TypeOf(text), declared, &budget);
}

void ExpectRejected(const arrow::Status& status, const std::string& says) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(CodeOf(status), ErrorCode::kInvalidRequest) << status.ToString();
  EXPECT_NE(status.message().find(says), std::string::npos) << status.ToString();
}

TEST(CheckType, TheTypesTheClientWritesPass) {
  for (const char* text : {"i64 {}", "string {}", "bool {}", "fp64 {}", "date {}",
                           "decimal { precision: 15 scale: 2 }", "list { type { i32 {} } }",
                           "struct { types { i64 {} } types { string {} } }"}) {
    EXPECT_TRUE(Check(text).ok()) << text << ": " << Check(text).ToString();
  }
}

TEST(CheckType, DecimalsOutsideArrowsPrecisionAreRefused) {
  // Arrow aborts on these: they must never reach it.
  ExpectRejected(Check("decimal { precision: 0 scale: 0 }"), "precision");
  ExpectRejected(Check("decimal { precision: 39 scale: 0 }"), "precision");
  ExpectRejected(Check("decimal { precision: 10 scale: 11 }"), "scale");
  ExpectRejected(Check("list { type { decimal { precision: 40 scale: 0 } } }"), "precision");
}

TEST(CheckType, NestingDeeperThanTheLimitIsRefused) {
  std::string text = "i64 {}";
  for (int depth = 0; depth <= Limits::kMaxDepth; ++depth) text = "list { type { " + text + " } }";
  ASSERT_FALSE(Check(text).ok());
  EXPECT_EQ(CodeOf(Check(text)), ErrorCode::kInvalidRequest);
}

TEST(CheckType, AnUndeclaredUserTypeIsRefused) {
  EXPECT_FALSE(Check("user_defined { type_reference: 7 }").ok());
}

TEST(NamedStruct, NamesPairWithColumnsOneToOne) {
  Budget budget;
  sp::NamedStruct schema;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"(names: "a" names: "b" names: "b_x" struct { types { i64 {} }
         types { struct { types { string {} } } } })",
      &schema));
  auto types = CheckNamedStruct(schema, {}, &budget);
  ASSERT_TRUE(types.ok()) << types.status().ToString();
  EXPECT_EQ(types->size(), 2u);

  schema.add_names("extra");
  EXPECT_FALSE(CheckNamedStruct(schema, {}, &budget).ok());
  schema.mutable_names()->RemoveLast();
  schema.set_names(1, "a");  // two top-level columns named "a"
  EXPECT_FALSE(CheckNamedStruct(schema, {}, &budget).ok());
}

TEST(NamesFor, AStructSpendsANamePerFieldDepthFirst) {
  EXPECT_EQ(NamesFor(TypeOf("i64 {}")), 1);
  EXPECT_EQ(NamesFor(TypeOf("struct { types { i64 {} } types { string {} } }")), 3);
  EXPECT_EQ(NamesFor(TypeOf("struct { types { struct { types { i64 {} } } } }")), 3);
  EXPECT_EQ(NamesFor(TypeOf("list { type { struct { types { i64 {} } } } }")), 1);
}

TEST(SameType, NullabilityAside) {
  EXPECT_TRUE(SameType(TypeOf("i64 { nullability: NULLABILITY_NULLABLE }"),
                       TypeOf("i64 { nullability: NULLABILITY_REQUIRED }")));
  EXPECT_FALSE(SameType(TypeOf("i64 {}"), TypeOf("i32 {}")));
  EXPECT_FALSE(SameType(TypeOf("decimal { precision: 15 scale: 2 }"),
                        TypeOf("decimal { precision: 15 scale: 3 }")));
}

TEST(TypeClasses, ComparableAsArrowsKernelsCastThem) {
  const Declarations none;
  EXPECT_EQ(ClassOf(TypeOf("i8 {}"), none), TypeClass::kInteger);
  EXPECT_EQ(ClassOf(TypeOf("fp32 {}"), none), TypeClass::kFloating);
  EXPECT_EQ(ClassOf(TypeOf("decimal { precision: 5 scale: 1 }"), none), TypeClass::kDecimal);
  EXPECT_TRUE(Comparable(TypeClass::kInteger, TypeClass::kDecimal));
  EXPECT_TRUE(Comparable(TypeClass::kText, TypeClass::kText));
  EXPECT_FALSE(Comparable(TypeClass::kText, TypeClass::kInteger));
  EXPECT_FALSE(Comparable(TypeClass::kDate, TypeClass::kTimestamp));
  EXPECT_TRUE(IsNumeric(TypeClass::kFloating));
  EXPECT_FALSE(IsNumeric(TypeClass::kBoolean));
}

}  // namespace
}  // namespace skyhook::substrait_check
