// Reads a Parquet object inside storage: its footer parsed once per process
// (parsed_footers.h), its pages verified as they are read (page_checksums.h),
// text and decimals checked once decoded, one row group at a time, with the
// row groups' stated bounds, byte ranges and row selection (physical_prefilter.h).
#pragma once

#include <memory>

#include <arrow/memory_pool.h>
#include <arrow/result.h>

#include "skyhook/storage/object/object_file.h"
#include "skyhook/storage/object/object_reader.h"

namespace skyhook {

/// Errors: kCorruptObject when the bytes are not a Parquet file Arrow reads.
arrow::Result<std::unique_ptr<ObjectReader>> OpenParquetObject(std::shared_ptr<ObjectFile> file,
                                                               arrow::MemoryPool* pool);

}  // namespace skyhook
