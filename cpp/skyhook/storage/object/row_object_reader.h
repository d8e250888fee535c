// Reads a row object (format "rows", row_format.fbs) as Arrow batches inside
// storage: the object's structure is verified when it is opened, each row
// (a FlexBuffers vector) when it is decoded, one block at a time.
#pragma once

#include <memory>

#include <arrow/memory_pool.h>
#include <arrow/result.h>

#include "skyhook/storage/object/object_file.h"
#include "skyhook/storage/object/object_reader.h"

namespace skyhook {

constexpr char kRowFormat[] = "rows";

/// Errors: kCorruptObject when the bytes are not a row object of a known
/// version whose schema, blocks and row counts agree.
arrow::Result<std::unique_ptr<ObjectReader>> OpenRowObject(std::shared_ptr<ObjectFile> file,
                                                           arrow::MemoryPool* pool);

}  // namespace skyhook
