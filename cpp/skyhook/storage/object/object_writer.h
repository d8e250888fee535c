// Encodes a table as an object of a given design: the one writer behind
// ingest (through the embedded extension), the storage-side transform and
// the client-side transform, so every path builds identical objects.
#pragma once

#include <memory>

#include <arrow/buffer.h>
#include <arrow/memory_pool.h>
#include <arrow/result.h>
#include <arrow/table.h>

#include "skyhook/storage/object/object_design.h"

namespace skyhook {

struct EncodedObject {
  std::shared_ptr<arrow::Buffer> data;
  /// The design as built: column groups resolved to the table's columns
  /// (what no group names goes into one last group), extents, row count.
  ObjectDesign design;
};

/// Sorts the table by the design's keys, then writes each column group as its
/// own Parquet file, IPC file or row block sequence, one after another.
/// Errors: kInvalidRequest for an impossible design (CheckDesignRequest),
/// kUnknownColumn for a group or sort key naming a column the table lacks.
arrow::Result<EncodedObject> EncodeObject(const std::shared_ptr<arrow::Table>& table,
                                          const ObjectDesign& design, arrow::MemoryPool* pool);

}  // namespace skyhook
