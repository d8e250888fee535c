// Sorted integer columns as their first differences: a sorted key (TPC-H's
// l_orderkey) differs by small steps, which compress several times better
// than the values. The client restores the values by a cumulative sum.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <arrow/memory_pool.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

namespace skyhook {

/// The batch metadata key naming the encoded columns, e.g. "0,3".
inline constexpr char kDeltaMetadataKey[] = "skyhook.delta";
/// Shorter columns go as they are: the metadata (about 50 bytes a batch) would
/// cost more than their differences save, and a reply that only just fits its
/// object would pass it.
inline constexpr int64_t kMinDeltaRows = 256;

struct DeltaEncodedBatch {
  /// Null when no column was encoded: the batch goes as it is.
  std::shared_ptr<arrow::RecordBatch> batch;
  /// The indices of the encoded columns, comma-separated; empty when none was.
  std::string columns;
};

/// Replaces each top-level integer column of `batch` that has no nulls and is
/// non-decreasing by its first differences (the first value kept), computed in
/// the unsigned type so that nothing overflows. Batches of fewer than
/// kMinDeltaRows rows stay as they are. New buffers come from `pool`.
arrow::Result<DeltaEncodedBatch> DeltaEncodeSortedIntegers(const arrow::RecordBatch& batch,
                                                           arrow::MemoryPool* pool);

}  // namespace skyhook
