#include "skyhook/substrait/checks.h"

#include <string>
#include <vector>

namespace skyhook::substrait_check {

arrow::Status Budget::Visit(int depth) {
  if (depth > Limits::kMaxDepth) {
    return Reject("nesting deeper than ", Limits::kMaxDepth, " levels");
  }
  if (++nodes_ > Limits::kMaxNodes) {
    return Reject("more than ", Limits::kMaxNodes, " expression and type nodes");
  }
  return arrow::Status::OK();
}

arrow::Status Budget::VisitExpression(int depth) {
  ++expression_nodes_;
  return Visit(depth);
}

arrow::Status Budget::AddInValues(int64_t count) {
  in_values_ += count;
  if (in_values_ > Limits::kMaxInValues) {
    return Reject("IN lists of more than ", Limits::kMaxInValues, " values in all");
  }
  return arrow::Status::OK();
}

arrow::Status NoUnknownFields(const google::protobuf::Message& message) {
  if (!message.GetReflection()->GetUnknownFields(message).empty()) {
    return Reject(message.GetDescriptor()->name(), " carries fields this storage does not know");
  }
  return arrow::Status::OK();
}

arrow::Status OnlyFields(const google::protobuf::Message& message,
                         std::initializer_list<std::string_view> allowed, std::string_view oneof) {
  ARROW_RETURN_NOT_OK(NoUnknownFields(message));
  const auto* reflection = message.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const auto* field : fields) {
    bool ok = !oneof.empty() && field->containing_oneof() != nullptr &&
              field->containing_oneof()->name() == oneof;
    for (auto name : allowed) ok = ok || field->name() == name;
    if (!ok) {
      return Reject("field '", field->name(), "' of ", message.GetDescriptor()->name(),
                    " is not supported in storage");
    }
  }
  return arrow::Status::OK();
}

arrow::Status Parse(std::string_view bytes, const char* what, google::protobuf::Message* message) {
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !message->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Error(ErrorCode::kInvalidRequest, "malformed Substrait ", what, ": not a valid ",
                 message->GetDescriptor()->name(), " message");
  }
  return arrow::Status::OK();
}

}  // namespace skyhook::substrait_check
