// The two Substrait messages a request may carry, checked whole before Arrow
// sees them:
//  - a scan's filter or projection: an ExtendedExpression over the schema it
//    names (a filter: exactly one boolean expression);
//  - execute_plan's Plan: one root `[aggregate ->] project -> [filter ->] read`,
//    the read being the named table "object" (the object the method runs on;
//    no local files, no other tables, no extensions), emits in range.
#pragma once

#include <string>
#include <string_view>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

namespace skyhook::substrait_check {

enum class ExpressionRole { kFilter, kProjection };

/// Returns the message's expression nodes: what Arrow evaluates per row.
arrow::Result<int64_t> CheckExtendedExpression(std::string_view serialized, ExpressionRole role);

struct CheckedPlan {
  bool has_aggregate = false;
  /// Expression nodes of the filter, projections and measures: the work per row.
  int64_t expression_nodes = 0;
  /// The same plan with its aggregate removed (the project is its relation).
  std::string input_plan;
};

arrow::Result<CheckedPlan> CheckPlan(std::string_view serialized);

}  // namespace skyhook::substrait_check
