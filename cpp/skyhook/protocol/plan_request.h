// The request of the execute_plan method: a Substrait plan whose one named
// table is the object the method runs on.
#pragma once

#include <memory>

#include <arrow/buffer.h>
#include <arrow/result.h>

#include "skyhook/protocol/pushback_limits.h"
#include "skyhook/protocol/result_options.h"

namespace skyhook {

struct PlanRequest {
  std::shared_ptr<arrow::Buffer> plan;  // a serialized substrait.Plan
  ResultOptions result;
  PushbackLimits pushback;

  static arrow::Result<PlanRequest> Decode(const std::shared_ptr<arrow::Buffer>& message);
};

}  // namespace skyhook
