// The aggregate of an execute_plan request, built as an Acero node by storage
// itself. Arrow 26's Substrait consumer types a project's computed columns by
// their kernels' declared output types, which decimal arithmetic leaves null
// (they depend on the arguments), and then dereferences them building the
// aggregate: `sum(price * (1 - discount))` crashed it. Acero's project node
// types the same expressions correctly, so storage converts only the plan's
// input (read -> filter -> project) with the consumer and adds the aggregate
// here, with the consumer's own measure mappings.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/acero/exec_plan.h>
#include <arrow/engine/substrait/extension_set.h>
#include <arrow/result.h>

namespace skyhook {

class PlanAggregate {
 public:
  /// The aggregate of a plan that CheckPlan accepted with has_aggregate set:
  /// keys and measure arguments must be direct references to input columns.
  static arrow::Result<PlanAggregate> Make(std::string_view serialized_plan,
                                           const arrow::engine::ExtensionIdRegistry* registry);

  /// The aggregate (and the emit, if the plan has one) over input.
  arrow::acero::Declaration Over(arrow::acero::Declaration input) const;

  /// A column of the read relation that the input passes to a key unchanged
  /// and uses for nothing else, and the output columns that key becomes.
  struct GroupedOnly {
    int read_column;
    std::vector<int> outputs;
  };
  /// Those of the aggregate over `input` (the converted plan's input: projects
  /// and filters over its read relation; other shapes have none).
  std::vector<GroupedOnly> GroupedOnlyColumns(const arrow::acero::Declaration& input) const;

  /// The names of the plan's output columns.
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<arrow::compute::Aggregate> aggregates_;
  std::vector<arrow::FieldRef> keys_;
  std::vector<int> emit_;  // empty: every column in order
  std::vector<std::string> names_;
};

}  // namespace skyhook
