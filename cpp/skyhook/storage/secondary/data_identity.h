// The identity of an object's data: what statistics and indexes are tagged
// with, so values computed from other data (before an append or a transform)
// are never used: the object's size and its design attribute, which every
// rewrite gives a new generation.
#pragma once

#include <string>

#include <arrow/result.h>

#include "skyhook/storage/object/object_context.h"

namespace skyhook {

/// The object's size, its format attribute and its design attribute (when
/// set), as one string: equal strings mean the same data.
arrow::Result<std::string> DataIdentity(ObjectContext* object);

}  // namespace skyhook
