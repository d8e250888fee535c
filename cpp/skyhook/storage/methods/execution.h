// The shape every storage method shares: decode the request, count the call
// as in flight, run it within the node's limits, and report statistics and
// the limits whatever happened.
#pragma once

#include <memory>

#include <arrow/buffer.h>

#include "skyhook/protocol/reply.h"
#include "skyhook/storage/object/object_context.h"
#include "skyhook/storage/runtime/call_resources.h"
#include "skyhook/storage/runtime/cpu_timer.h"
#include "skyhook/storage/runtime/pushback.h"

namespace skyhook {

/// Execution types have a constructor (Request, CallResources*), Run(object,
/// call, reply) and AddStatistics(reply, timer). kPushedBack and, where the
/// client can do the work itself (kPushesBackOverLimits), kLimitExceeded
/// become a reply that executed nothing. Object is ObjectContext, or
/// MutableObjectContext for a method that writes.
template <typename Request, typename Execution, typename Object>
Reply RunExecution(Object* object, const std::shared_ptr<arrow::Buffer>& request) {
  CpuTimer timer;
  InFlightCall call;
  CallResources resources;  // outlives the execution, which allocates from its pool
  Reply reply;
  auto decoded = Request::Decode(request);
  if (!decoded.ok()) {
    reply = Reply::FromStatus(decoded.status());
  } else {
    Execution execution(std::move(*decoded), &resources);
    auto status = execution.Run(object, call, &reply);
    if (!status.ok()) {
      if (Execution::kPushesBackOverLimits && CodeOf(status) == ErrorCode::kLimitExceeded) {
        status = Error(ErrorCode::kPushedBack, status.message());
      }
      reply = Reply::FromStatus(status);
    }
    execution.AddStatistics(&reply, timer);
  }
  resources.limits().Report(&reply.statistics);
  return reply;
}

}  // namespace skyhook
