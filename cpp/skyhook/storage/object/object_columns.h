// Matching the columns a request was bound to against the object's own schema.
#pragma once

#include <arrow/result.h>
#include <arrow/type.h>

namespace skyhook {

/// The object's index of the field a request names, checked by name and type
/// (kUnknownColumn, kTypeMismatch).
arrow::Result<int> FindObjectField(const arrow::Schema& object_schema,
                                   const arrow::Field& requested);

}  // namespace skyhook
