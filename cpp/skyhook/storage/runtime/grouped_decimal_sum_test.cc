#include "skyhook/storage/runtime/grouped_decimal_sum.h"

#include <random>
#include <string>
#include <vector>

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/array/builder_decimal.h>
#include <arrow/array/builder_primitive.h>
#include <arrow/compute/api.h>
#include <arrow/table.h>
#include <gtest/gtest.h>

#include "skyhook/storage/runtime/decimal_kernels.h"

namespace skyhook {
namespace {

namespace ac = arrow::compute;
constexpr int kGroups = 10;

// Keys 0..9; group 7 all null, group 8 near decimal128's bounds (its sums
// wrap), the rest small and precision-18-sized values with nulls.
std::shared_ptr<arrow::Table> Values(const std::shared_ptr<arrow::DataType>& type, int rows) {
  std::mt19937_64 random(static_cast<uint64_t>(rows));
  arrow::Int32Builder keys;
  arrow::Decimal128Builder values(type);
  for (int row = 0; row < rows; ++row) {
    const int key = static_cast<int>(random() % kGroups);
    EXPECT_TRUE(keys.Append(key).ok());
    if (key == 7 || random() % 9 == 0) {
      EXPECT_TRUE(values.AppendNull().ok());
      continue;
    }
    const bool negative = random() & 1;
    arrow::Decimal128 value =
        key == 8  ? arrow::Decimal128(INT64_MAX - static_cast<int64_t>(random() % 3), random())
        : key < 4 ? arrow::Decimal128(static_cast<int64_t>(random() % 1'000'000'000'000'000'000))
                  : arrow::Decimal128(static_cast<int64_t>(random() % 1000));
    EXPECT_TRUE(values.Append(negative ? -value : value).ok());
  }
  auto schema = arrow::schema({arrow::field("k", arrow::int32()), arrow::field("v", type)});
  return arrow::Table::Make(schema, {keys.Finish().ValueOrDie(), values.Finish().ValueOrDie()});
}

// hash_sum of v by k through Acero with the given registry, sorted by k.
std::shared_ptr<arrow::Table> Sums(const std::shared_ptr<arrow::Table>& table,
                                   const ac::ScalarAggregateOptions& options,
                                   ac::FunctionRegistry* registry) {
  arrow::acero::Declaration plan = arrow::acero::Declaration::Sequence({
      {"table_source", arrow::acero::TableSourceNodeOptions(table, /*max_batch_size=*/64)},
      {"aggregate",
       arrow::acero::AggregateNodeOptions(
           {{"hash_sum", std::make_shared<ac::ScalarAggregateOptions>(options), "v", "sum"}},
           {"k"})},
      {"order_by", arrow::acero::OrderByNodeOptions(ac::Ordering({ac::SortKey("k")}))},
  });
  arrow::acero::QueryOptions query;
  query.use_threads = true;  // thread-local states, merged
  query.function_registry = registry;
  return arrow::acero::DeclarationToTable(std::move(plan), query).ValueOrDie();
}

TEST(GroupedDecimalSum, AnswersAsArrowsOwnAcrossOptionsNullsAndWrapping) {
  auto* storages = StorageFunctionRegistry().ValueOrDie();
  for (const auto& type : {arrow::decimal128(18, 2), arrow::decimal128(38, 0),
                           arrow::decimal128(30, 9), arrow::decimal128(1, 1)}) {
    for (int rows : {0, 1, 1000}) {
      auto table = Values(type, rows);
      for (const auto& options :
           {ac::ScalarAggregateOptions::Defaults(), ac::ScalarAggregateOptions(false, 1),
            ac::ScalarAggregateOptions(true, 0), ac::ScalarAggregateOptions(true, 3)}) {
        auto expected = Sums(table, options, ac::GetFunctionRegistry());
        auto actual = Sums(table, options, storages);
        ASSERT_TRUE(actual->schema()->Equals(*expected->schema())) << actual->schema()->ToString();
        EXPECT_TRUE(actual->Equals(*expected))
            << type->ToString() << " rows " << rows << " " << options.ToString() << "\n"
            << expected->ToString() << "\n"
            << actual->ToString();
      }
    }
  }
}

TEST(GroupedDecimalSum, KeepsArrowsKernelsForOtherTypes) {
  auto* storages = StorageFunctionRegistry().ValueOrDie();
  auto arrows = ac::GetFunctionRegistry()->GetFunction("hash_sum").ValueOrDie();
  auto ours = storages->GetFunction("hash_sum").ValueOrDie();
  for (const auto& type : {arrow::int64(), arrow::float64(), arrow::decimal256(40, 2)}) {
    std::vector<arrow::TypeHolder> types = {type, arrow::uint32()};
    EXPECT_EQ(ours->DispatchExact(types).ValueOrDie(), arrows->DispatchExact(types).ValueOrDie())
        << type->ToString();
  }
  std::vector<arrow::TypeHolder> decimals = {arrow::decimal128(15, 2), arrow::uint32()};
  EXPECT_NE(ours->DispatchExact(decimals).ValueOrDie(),
            arrows->DispatchExact(decimals).ValueOrDie());
}

}  // namespace
}  // namespace skyhook
