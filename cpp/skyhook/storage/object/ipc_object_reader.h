// Reads an Arrow IPC file object inside storage: its blocks checked against
// the file before Arrow reads them (ipc_blocks.h), each record batch validated
// whole, one record batch a zone.
#pragma once

#include <memory>

#include <arrow/memory_pool.h>
#include <arrow/result.h>

#include "skyhook/storage/object/object_file.h"
#include "skyhook/storage/object/object_reader.h"

namespace skyhook {

/// Errors: kCorruptObject when the bytes are not an Arrow IPC file whose blocks agree.
arrow::Result<std::unique_ptr<ObjectReader>> OpenIpcObject(std::shared_ptr<ObjectFile> file,
                                                           arrow::MemoryPool* pool);

}  // namespace skyhook
