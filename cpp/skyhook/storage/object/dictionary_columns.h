#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <arrow/array.h>
#include <arrow/compute/exec.h>
#include <arrow/result.h>
#include <parquet/arrow/schema.h>
#include <parquet/metadata.h>

namespace skyhook {

/// Whether every data page of a column chunk is dictionary-encoded (from its
/// encoding statistics), with a dictionary page of at most max_dictionary_bytes.
bool DictionaryEncodedThroughout(const parquet::ColumnChunkMetaData& chunk,
                                 int64_t max_dictionary_bytes);

/// The Parquet leaves of text columns stored with small dictionaries in every
/// row group: decoded as dictionaries and gathered into plain arrays from them
/// (PlainColumns), they cost one UTF-8 check per dictionary value instead of
/// one per row, and no per-value append (a fifth of TPC-H Q1's storage CPU was
/// decoding its one-character keys). Only top-level string and binary leaves
/// whose every data page is dictionary-encoded qualify.
std::vector<int> SmallDictionaryLeaves(const parquet::FileMetaData& metadata,
                                       const parquet::arrow::SchemaManifest& manifest,
                                       const arrow::Schema& schema);

/// Turns the dictionary columns of one reader's batches back into their plain
/// type, checking each distinct dictionary once (a row group's batches share it).
class PlainColumns {
 public:
  /// Of a batch's columns, the dictionary ones become plain arrays of their
  /// value type; corrupt dictionaries or indices are errors. converted[i]
  /// tells which columns were gathered (and are therefore checked).
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Convert(
      const std::shared_ptr<arrow::RecordBatch>& batch, const std::shared_ptr<arrow::Schema>& plain,
      arrow::compute::ExecContext* context, std::vector<bool>* converted);

 private:
  // Held, so that a checked dictionary's address is never another's.
  std::vector<std::shared_ptr<arrow::ArrayData>> checked_;
};

}  // namespace skyhook
