// What execute_plan accepts, checked on the protobuf wire format before Arrow
// sees the plan: one root relation of the shape the client's decomposer emits,
//   [aggregate ->] project -> [filter ->] read (the named table "object"),
// and whether the aggregate's input has a type for every column. Arrow 26's
// Substrait consumer dereferences a null type (SIGSEGV) when it converts an
// aggregate over decimal arithmetic; a storage node must never let it.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <arrow/buffer.h>
#include <arrow/status.h>
#include <arrow/type.h>

namespace skyhook {

struct PlanShape {
  bool has_aggregate = false;
  /// The same plan with the aggregate removed: its root is the project.
  std::string input_plan;
};

/// kInvalidRequest when the plan is malformed or of another shape.
arrow::Result<PlanShape> CheckPlanShape(std::string_view plan);

/// An error when a column of the aggregate's input has no type.
arrow::Status CheckTypedColumns(const arrow::Schema& schema);

}  // namespace skyhook
