// The create_index and drop_index methods (write): an index on one column of
// the object (secondary/column_index.h), kept in its omap and listed there.
#pragma once

#include <memory>

#include <arrow/buffer.h>

#include "skyhook/protocol/reply.h"
#include "skyhook/storage/object/mutable_object_context.h"

namespace skyhook {

/// Builds (or rebuilds) the index of the request's column. kUnknownColumn,
/// kTypeMismatch for a type without an order to index; nothing is written then.
Reply CreateIndex(MutableObjectContext* object, const std::shared_ptr<arrow::Buffer>& request);

/// Removes the column's index; removing an index that does not exist is not an error.
Reply DropIndex(MutableObjectContext* object, const std::shared_ptr<arrow::Buffer>& request);

}  // namespace skyhook
