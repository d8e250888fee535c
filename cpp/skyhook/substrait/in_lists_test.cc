#include "skyhook/substrait/in_lists.h"

#include <memory>
#include <string>
#include <vector>

#include <arrow/api.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/compute/exec.h>
#include <gtest/gtest.h>

#include "skyhook/testing/ok.h"

namespace skyhook {
namespace {

namespace cp = arrow::compute;

// k: int64 with nulls, x: float64, s: string.
std::shared_ptr<arrow::Schema> Schema() {
  return arrow::schema({arrow::field("k", arrow::int64()), arrow::field("x", arrow::float64()),
                        arrow::field("s", arrow::utf8())});
}

std::shared_ptr<arrow::RecordBatch> Rows() {
  arrow::Int64Builder k;
  arrow::DoubleBuilder x;
  arrow::StringBuilder s;
  for (int64_t row = 0; row < 40; ++row) {
    EXPECT_TRUE((row % 7 == 0 ? k.AppendNull() : k.Append(row % 11)).ok());
    EXPECT_TRUE(x.Append(row % 5 - 2.0).ok());
    EXPECT_TRUE(s.Append(std::string(1, static_cast<char>('a' + row % 4))).ok());
  }
  return arrow::RecordBatch::Make(Schema(), 40, {Ok(k.Finish()), Ok(x.Finish()), Ok(s.Finish())});
}

// `field == v1 or field == v2 or ...`, as Arrow's consumer builds an IN list.
cp::Expression Chain(const std::string& field, const std::vector<cp::Expression>& values) {
  std::vector<cp::Expression> equalities;
  for (const auto& value : values) equalities.push_back(cp::equal(cp::field_ref(field), value));
  return cp::or_(equalities);
}

std::vector<cp::Expression> Int64s(std::vector<int64_t> values) {
  std::vector<cp::Expression> literals;
  for (int64_t value : values) literals.push_back(cp::literal(value));
  return literals;
}

arrow::Datum Evaluate(const cp::Expression& bound) {
  auto rows = Rows();
  return Ok(cp::ExecuteScalarExpression(bound, *rows->schema(), arrow::Datum(rows)));
}

bool CallsIsIn(const cp::Expression& expression) {
  const auto* call = expression.call();
  if (call == nullptr) return false;
  if (call->function_name == "is_in") return true;
  for (const auto& argument : call->arguments) {
    if (CallsIsIn(argument)) return true;
  }
  return false;
}

TEST(InListsAsSets, AChainIsOneIsInWithTheSameAnswerNullsAndNegationIncluded) {
  auto chain = Chain("k", Int64s({1, 3, 5, 10, 12}));
  for (const auto& filter : {chain, cp::not_(chain),
                             cp::and_(chain, cp::greater(cp::field_ref("x"), cp::literal(0.0)))}) {
    auto bound = Ok(filter.Bind(*Schema()));
    int64_t collapsed = 0;
    auto sets = Ok(InListsAsSets(bound, *Schema(), &collapsed));
    EXPECT_EQ(collapsed, 5);
    EXPECT_TRUE(CallsIsIn(sets)) << sets.ToString();
    EXPECT_TRUE(Evaluate(sets).Equals(Evaluate(bound))) << filter.ToString();
  }
}

TEST(InListsAsSets, ChainsOfTextAreSetsToo) {
  auto chain = Chain("s", {cp::literal("a"), cp::literal("c")});
  auto bound = Ok(chain.Bind(*Schema()));
  auto sets = Ok(InListsAsSets(bound, *Schema()));
  EXPECT_TRUE(CallsIsIn(sets));
  EXPECT_TRUE(Evaluate(sets).Equals(Evaluate(bound)));
}

TEST(InListsAsSets, OnlyTheChainInsideAnOrOfOtherFieldsChanges) {
  auto filter =
      cp::or_(Chain("k", Int64s({2, 4})), cp::equal(cp::field_ref("s"), cp::literal("b")));
  auto bound = Ok(filter.Bind(*Schema()));
  int64_t collapsed = 0;
  auto sets = Ok(InListsAsSets(bound, *Schema(), &collapsed));
  EXPECT_EQ(collapsed, 2);
  EXPECT_TRUE(Evaluate(sets).Equals(Evaluate(bound)));
}

TEST(InListsAsSets, FloatsOneValueAndNullsStayComparisons) {
  const auto floats = Chain("x", {cp::literal(0.0), cp::literal(-0.0)});
  const auto one = Chain("k", Int64s({4}));
  const auto with_null =
      Chain("k", {cp::literal(int64_t{1}), cp::literal(arrow::MakeNullScalar(arrow::int64()))});
  for (const auto& filter : {floats, one, with_null}) {
    auto bound = Ok(filter.Bind(*Schema()));
    int64_t collapsed = -1;
    auto sets = Ok(InListsAsSets(bound, *Schema(), &collapsed));
    EXPECT_EQ(collapsed, 0) << filter.ToString();
    EXPECT_EQ(sets, bound) << filter.ToString();
  }
}

TEST(EqualityChain, NamesTheFieldAndValuesOrNone) {
  arrow::ScalarVector values;
  auto bound = Ok(Chain("k", Int64s({7, 8})).Bind(*Schema()));
  EXPECT_EQ(EqualityChain(bound, *Schema(), &values), 0);
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[1]->ToString(), "8");
  values.clear();
  auto mixed = Ok(cp::or_(cp::equal(cp::field_ref("k"), cp::literal(int64_t{1})),
                          cp::equal(cp::field_ref("s"), cp::literal("a")))
                      .Bind(*Schema()));
  EXPECT_EQ(EqualityChain(mixed, *Schema(), &values), -1);
}

}  // namespace
}  // namespace skyhook
