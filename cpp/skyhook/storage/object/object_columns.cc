#include "skyhook/storage/object/object_columns.h"

#include "skyhook/protocol/error.h"

namespace skyhook {

arrow::Result<int> FindObjectField(const arrow::Schema& object_schema,
                                   const arrow::Field& requested) {
  int index = object_schema.GetFieldIndex(requested.name());
  if (index < 0) {
    return Error(ErrorCode::kUnknownColumn, "column '", requested.name(),
                 "' does not exist in the object");
  }
  const auto& stored = object_schema.field(index)->type();
  if (!stored->Equals(*requested.type())) {
    return Error(ErrorCode::kTypeMismatch, "column '", requested.name(), "' is ",
                 stored->ToString(), " in the object but the request uses ",
                 requested.type()->ToString());
  }
  return index;
}

}  // namespace skyhook
