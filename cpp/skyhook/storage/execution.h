// The shape every data-returning method shares: decode the request, count the
// call as in flight, run it, and report statistics whatever happened.
#pragma once

#include <memory>

#include <arrow/buffer.h>

#include "skyhook/protocol/reply.h"
#include "skyhook/storage/cpu_timer.h"
#include "skyhook/storage/object_context.h"
#include "skyhook/storage/pushback.h"

namespace skyhook {

template <typename Request, typename Execution>
Reply RunExecution(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request) {
  CpuTimer timer;
  InFlightCall call;
  auto decoded = Request::Decode(request);
  if (!decoded.ok()) return Reply::FromStatus(decoded.status());
  Execution execution(std::move(*decoded));
  Reply reply;
  auto status = execution.Run(object, call, &reply);
  if (!status.ok()) reply = Reply::FromStatus(status);
  execution.AddStatistics(&reply, timer);
  return reply;
}

}  // namespace skyhook
