// Omap values of the secondary design: one Arrow record batch each, as an IPC
// stream, with the identity of the data they describe in the schema's metadata.
#pragma once

#include <memory>
#include <string>

#include <arrow/record_batch.h>
#include <arrow/result.h>

namespace skyhook {

constexpr char kIdentityMetadata[] = "skyhook.identity";

arrow::Result<std::string> EncodeOmapValue(const arrow::RecordBatch& batch,
                                           const std::string& identity);

/// The batch of a value (kCorruptObject when it is not one valid batch).
arrow::Result<std::shared_ptr<arrow::RecordBatch>> DecodeOmapValue(const std::string& value,
                                                                   const std::string& key);

/// Whether a decoded value was computed from the data of `identity`.
bool DescribesData(const arrow::RecordBatch& batch, const std::string& identity);

}  // namespace skyhook
