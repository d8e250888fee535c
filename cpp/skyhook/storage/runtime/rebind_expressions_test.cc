#include "skyhook/storage/runtime/rebind_expressions.h"

#include <optional>
#include <vector>

#include <arrow/array/builder_decimal.h>
#include <arrow/compute/api.h>
#include <arrow/compute/expression.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <gtest/gtest.h>

#include "skyhook/storage/runtime/decimal_kernels.h"

namespace skyhook {
namespace {

namespace ac = arrow::compute;

// Each call of an expression, depth first.
void Calls(const ac::Expression& expression, std::vector<const ac::Expression::Call*>* calls) {
  const auto* call = expression.call();
  if (call == nullptr) return;
  calls->push_back(call);
  for (const auto& argument : call->arguments) Calls(argument, calls);
}

// decimal(15, 2) values from their unscaled integers (nullopt: null).
std::shared_ptr<arrow::Array> Decimals(const std::vector<std::optional<int64_t>>& unscaled) {
  arrow::Decimal128Builder builder(arrow::decimal128(15, 2));
  for (const auto& value : unscaled) {
    EXPECT_TRUE((value ? builder.Append(arrow::Decimal128(*value)) : builder.AppendNull()).ok());
  }
  return builder.Finish().ValueOrDie();
}

TEST(RebindExpressions, DispatchesThroughTheContextsRegistryKeepingTypesAndValues) {
  auto type = arrow::decimal128(15, 2);
  auto schema = arrow::schema({arrow::field("price", type), arrow::field("discount", type)});
  // Scales differ: Arrow's binding casts the literal, and the cast stays.
  auto literal = ac::literal(std::make_shared<arrow::Decimal128Scalar>(arrow::Decimal128(12345),
                                                                       arrow::decimal128(10, 3)));
  auto filter = ac::and_(ac::greater_equal(ac::field_ref("price"), literal),
                         ac::less(ac::field_ref("discount"), ac::field_ref("price")));
  auto product = ac::call("multiply", {ac::field_ref("price"), ac::field_ref("discount")});
  arrow::engine::BoundExpressions bound{{{filter.Bind(*schema).ValueOrDie(), "filter"},
                                         {product.Bind(*schema).ValueOrDie(), "product"}},
                                        schema};

  auto* registry = StorageFunctionRegistry().ValueOrDie();
  ac::ExecContext context(arrow::default_memory_pool(), nullptr, registry);
  auto rebound = RebindExpressions(bound, &context).ValueOrDie();

  ASSERT_EQ(rebound.schema, schema);
  ASSERT_EQ(rebound.named_expressions.size(), 2u);
  auto batch = arrow::RecordBatch::Make(
      schema, 3, {Decimals({1235, -100, std::nullopt}), Decimals({5, -200, 1})});
  int storage_kernels = 0;
  for (size_t i = 0; i < 2; ++i) {
    const auto& before = bound.named_expressions[i];
    const auto& after = rebound.named_expressions[i];
    EXPECT_EQ(after.name, before.name);
    EXPECT_TRUE(after.expression.type()->Equals(*before.expression.type()));
    std::vector<const ac::Expression::Call*> arrows;
    std::vector<const ac::Expression::Call*> storages;
    Calls(before.expression, &arrows);
    Calls(after.expression, &storages);
    ASSERT_EQ(storages.size(), arrows.size());  // no cast added or lost
    for (size_t call = 0; call < storages.size(); ++call) {
      EXPECT_EQ(storages[call]->function_name, arrows[call]->function_name);
      // Casts bind to Arrow's function for the target type, not by name.
      if (storages[call]->function_name != "cast") {
        auto function = registry->GetFunction(storages[call]->function_name).ValueOrDie();
        EXPECT_EQ(storages[call]->function.get(), function.get()) << storages[call]->function_name;
      }
      storage_kernels += storages[call]->kernel != arrows[call]->kernel;
    }
    auto expected = ac::ExecuteScalarExpression(before.expression, *schema, batch).ValueOrDie();
    auto actual =
        ac::ExecuteScalarExpression(after.expression, *schema, batch, &context).ValueOrDie();
    EXPECT_TRUE(actual.Equals(expected)) << actual.ToString() << " vs " << expected.ToString();
  }
  EXPECT_EQ(storage_kernels, 3);  // >=, < and * are storage's; and_ and the cast Arrow's
}

}  // namespace
}  // namespace skyhook
