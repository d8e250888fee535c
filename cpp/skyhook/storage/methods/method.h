// The registry of storage-side methods, by the name both adapters expose them
// under ("scan", "describe", "execute_plan", "transform"). A method is a reader, given only
// the object's ObjectContext, or a writer, given its MutableObjectContext and
// registered by the adapters with write permission.
#pragma once

#include <array>
#include <memory>
#include <string_view>
#include <variant>

#include <arrow/buffer.h>

#include "skyhook/protocol/reply.h"
#include "skyhook/storage/methods/analyze.h"
#include "skyhook/storage/methods/column_index_methods.h"
#include "skyhook/storage/methods/describe.h"
#include "skyhook/storage/methods/execute_plan.h"
#include "skyhook/storage/methods/scan.h"
#include "skyhook/storage/methods/secondary_design_method.h"
#include "skyhook/storage/methods/transform.h"
#include "skyhook/storage/object/mutable_object_context.h"
#include "skyhook/storage/object/object_context.h"

namespace skyhook {

using ReadMethod = Reply (*)(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request);
using WriteMethod = Reply (*)(MutableObjectContext* object,
                              const std::shared_ptr<arrow::Buffer>& request);

struct MethodInfo {
  std::string_view name;
  std::variant<ReadMethod, WriteMethod> method;

  constexpr bool writes() const { return std::holds_alternative<WriteMethod>(method); }
};

// A compile-time table, so the Ceph adapter can register one entry point per method.
inline constexpr std::array<MethodInfo, 9> kMethods = {{
    {"scan", ReadMethod{&Scan}},
    {"describe", ReadMethod{&Describe}},
    {"execute_plan", ReadMethod{&ExecutePlan}},
    {"secondary_design", ReadMethod{&DescribeSecondaryDesign}},
    {"analyze", WriteMethod{&Analyze}},
    {"create_index", WriteMethod{&CreateIndex}},
    {"drop_index", WriteMethod{&DropIndex}},
    {"transform", WriteMethod{&Transform}},
    {"transform_check", ReadMethod{&TransformCheck}},
}};

/// The method registered under `name`, or nullptr.
const MethodInfo* FindMethod(std::string_view name);

/// Runs one method and encodes its reply: a writer gets the whole context, a
/// reader its read-only side. Never throws: a storage server must survive any
/// request, so exceptions become kInternal replies. `status`, if given, gets
/// the reply's code (Ceph returns only that of a method that writes).
std::shared_ptr<arrow::Buffer> RunMethod(const MethodInfo& method, MutableObjectContext* object,
                                         const std::shared_ptr<arrow::Buffer>& request,
                                         ErrorCode* status = nullptr);

/// The same over an object that cannot be written (the fuzz harnesses' objects
/// in memory): a writer is refused with a kInternal reply.
std::shared_ptr<arrow::Buffer> RunMethod(const MethodInfo& method, ObjectContext* object,
                                         const std::shared_ptr<arrow::Buffer>& request);

}  // namespace skyhook
