// Reads an object whose design keeps its columns in several groups, each a
// file of its own in an extent of the object: only the groups that hold the
// requested fields are read, and their batches are zipped row by row.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <arrow/memory_pool.h>
#include <arrow/result.h>
#include <arrow/status.h>

#include "skyhook/storage/object/object_context.h"
#include "skyhook/storage/object/object_design.h"
#include "skyhook/storage/object/object_reader.h"

namespace skyhook {

/// Opens every group's footer (so the object's schema is known and checked);
/// kCorruptObject when a group's file disagrees with the design.
arrow::Result<std::unique_ptr<ObjectReader>> OpenColumnGroups(ObjectContext* object,
                                                              const ObjectDesign& design,
                                                              arrow::MemoryPool* pool);

/// The design with only the groups that hold any of `columns` (the smallest
/// group when none does, for the row count).
ObjectDesign GroupsHolding(const ObjectDesign& design, const std::vector<std::string>& columns);

/// An extent's reader against the design: the design's row count (when it
/// knows one) and the group's columns, in order (when it names them).
arrow::Status CheckExtent(const ObjectReader& reader, const ObjectDesign& design,
                          const ColumnGroup& group);

}  // namespace skyhook
