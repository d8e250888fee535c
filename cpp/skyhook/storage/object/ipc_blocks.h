// Checks the record-batch and dictionary blocks of an Arrow IPC file before
// Arrow reads them. Reading a subset of a batch's fields, Arrow allocates a
// buffer of the length the batch's message claims (from the default pool)
// before it checks that length against the file: a corrupt object could make
// a node reserve gigabytes per call. Every block must lie inside the file, and
// every message's body length inside its block.
#pragma once

#include <arrow/status.h>

#include "skyhook/storage/object/object_file.h"

namespace skyhook {

/// kCorruptObject-worthy errors (plain Invalid) when a block or message lies.
arrow::Status CheckIpcBlocks(ObjectFile* file);

}  // namespace skyhook
