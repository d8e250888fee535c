// The identity of an object's data: what statistics and indexes are tagged
// with, so values computed from other data (before an append or a transform)
// are never used. One small function, so that the design descriptor's
// generation can replace what it reads today.
#pragma once

#include <string>

#include <arrow/result.h>

#include "skyhook/storage/object/object_context.h"

namespace skyhook {

/// The xattr the design descriptor keeps its generation in, once written.
constexpr char kDesignAttribute[] = "skyhook.design";

/// The object's size, its format attribute and its design attribute (when
/// set), as one string: equal strings mean the same data.
arrow::Result<std::string> DataIdentity(ObjectContext* object);

}  // namespace skyhook
