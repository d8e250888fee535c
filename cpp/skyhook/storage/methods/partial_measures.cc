#include "skyhook/storage/methods/partial_measures.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <arrow/compute/api_aggregate.h>

namespace skyhook {
namespace {

using arrow::engine::ExtensionIdRegistry;
using arrow::engine::SubstraitCall;

// One column in, Acero's function of the same name out (hash_ when grouped),
// with fixed options: the client computes the same partial with them.
ExtensionIdRegistry::SubstraitAggregateToArrow Mapping(
    std::string function, std::shared_ptr<arrow::compute::FunctionOptions> options) {
  return [function = std::move(function), options = std::move(options)](
             const SubstraitCall& call) -> arrow::Result<arrow::compute::Aggregate> {
    if (call.size() != 1 || !call.HasValueArg(0)) {
      return arrow::Status::Invalid("the measure ", call.id().name, " takes one column");
    }
    ARROW_ASSIGN_OR_RAISE(auto argument, call.GetValueArg(0));
    const arrow::FieldRef* column = argument.field_ref();
    if (column == nullptr) {
      return arrow::Status::Invalid("the measure ", call.id().name, " takes a column");
    }
    std::string name = call.is_hash() ? "hash_" + function : function;
    return arrow::compute::Aggregate(std::move(name), options, *column, "");
  };
}

std::shared_ptr<arrow::compute::FunctionOptions> SketchOptions() {
  std::vector<double> quantiles;
  for (int i = 0; i < kSketchQuantiles; ++i) {
    quantiles.push_back((i + 0.5) / kSketchQuantiles);
  }
  return std::make_shared<arrow::compute::TDigestOptions>(std::move(quantiles), /*delta=*/100,
                                                          /*buffer_size=*/500, /*skip_nulls=*/true,
                                                          /*min_count=*/0);
}

arrow::Result<std::shared_ptr<ExtensionIdRegistry>> MakeRegistry() {
  auto registry =
      arrow::engine::nested_extension_id_registry(arrow::engine::default_extension_id_registry());
  auto plain = std::make_shared<arrow::compute::ScalarAggregateOptions>();
  auto rows = std::make_shared<arrow::compute::CountOptions>(arrow::compute::CountOptions::ALL);
  const std::pair<const char*, ExtensionIdRegistry::SubstraitAggregateToArrow> measures[] = {
      {"product", Mapping("product", plain)},
      {"any", Mapping("any", plain)},
      {"all", Mapping("all", plain)},
      {"count_all", Mapping("count", rows)},
      {"quantile_sketch", Mapping("tdigest", SketchOptions())},
  };
  for (const auto& [name, mapping] : measures) {
    ARROW_RETURN_NOT_OK(
        registry->AddSubstraitAggregateToArrow({kPartialMeasuresUri, name}, mapping));
  }
  return registry;
}

}  // namespace

arrow::Result<const ExtensionIdRegistry*> PartialMeasureRegistry() {
  static const auto registry = MakeRegistry();
  if (!registry.ok()) return registry.status();
  return registry->get();
}

}  // namespace skyhook
