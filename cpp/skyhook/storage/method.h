// The registry of storage-side methods, by the name both adapters expose them
// under ("scan", "describe", "execute_plan").
#pragma once

#include <array>
#include <memory>
#include <string_view>

#include <arrow/buffer.h>

#include "skyhook/protocol/reply.h"
#include "skyhook/storage/describe.h"
#include "skyhook/storage/execute_plan.h"
#include "skyhook/storage/object_context.h"
#include "skyhook/storage/scan.h"

namespace skyhook {

using Method = Reply (*)(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request);

struct MethodInfo {
  std::string_view name;
  Method method;
  bool writes;  // adapters register writers with write permission
};

// A compile-time table, so the Ceph adapter can register one entry point per method.
inline constexpr std::array<MethodInfo, 3> kMethods = {{
    {"scan", &Scan, false},
    {"describe", &Describe, false},
    {"execute_plan", &ExecutePlan, false},
}};

/// Runs one method and encodes its reply. Never throws: a storage server must
/// survive any request, so exceptions become kInternal replies.
std::shared_ptr<arrow::Buffer> RunMethod(Method method, ObjectContext* object,
                                         const std::shared_ptr<arrow::Buffer>& request);

}  // namespace skyhook
