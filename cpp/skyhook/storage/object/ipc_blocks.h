// Checks the record-batch and dictionary blocks of an Arrow IPC file before
// Arrow reads them. Reading a subset of a batch's fields, Arrow allocates a
// buffer of the length the batch's message claims (from the default pool)
// before it checks that length against the file: a corrupt object could make
// a node reserve gigabytes per call. Every block must lie inside the file, and
// every message's body length inside its block.
#pragma once

#include <cstdint>
#include <vector>

#include <arrow/result.h>
#include <arrow/status.h>

#include "skyhook/storage/object/object_file.h"

namespace skyhook {

struct IpcBlock {
  int64_t offset = 0;
  int32_t metadata_length = 0;
  int64_t body_length = 0;
};

/// Where the record batches of a checked file lie.
struct IpcLayout {
  std::vector<IpcBlock> record_batches;
  int64_t footer_start = 0;
};

/// Checks the footer, that every block lies inside the file, and the
/// dictionaries' messages. kCorruptObject-worthy errors (plain Invalid) when a
/// block or message lies.
arrow::Result<IpcLayout> CheckIpcBlocks(ObjectFile* file);

/// Checks one record batch's message before Arrow reads it: a scan that reads
/// a few batches (statistics, an index) reads only their messages.
arrow::Status CheckIpcMessage(ObjectFile* file, const IpcBlock& block, int64_t footer_start);

}  // namespace skyhook
