// Writes an Arrow table as a row object (row_format.fbs): the write-optimised
// design, one FlexBuffers vector per row, rows in blocks.
#pragma once

#include <cstdint>
#include <memory>

#include <arrow/buffer.h>
#include <arrow/memory_pool.h>
#include <arrow/result.h>
#include <arrow/table.h>

namespace skyhook {

constexpr uint32_t kRowFormatVersion = 1;
/// Rows per block: the unit a reader decodes and a statistics layer addresses.
constexpr int64_t kRowsPerBlock = 4096;

/// The table's rows as a row object, allocated from pool. Errors: kInvalidRequest
/// naming the column when a column's type is not one the format stores
/// (row_value_types.h) or the object would exceed FlatBuffers' 2 GiB.
arrow::Result<std::shared_ptr<arrow::Buffer>> EncodeRows(const arrow::Table& table,
                                                         arrow::MemoryPool* pool);

}  // namespace skyhook
