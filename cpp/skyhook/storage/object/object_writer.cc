#include "skyhook/storage/object/object_writer.h"

#include <set>
#include <utility>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/compute/api_vector.h>
#include <arrow/compute/exec.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/writer.h>
#include <arrow/util/compression.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/extent_checksums.h"
#include "skyhook/storage/object/row_encoder.h"

namespace skyhook {
namespace {

arrow::Result<int> FieldIndex(const arrow::Schema& schema, const std::string& column,
                              const char* role) {
  int index = schema.GetFieldIndex(column);
  if (index < 0) {
    return Error(ErrorCode::kUnknownColumn, "the design's ", role, " names column '", column,
                 "', which the data does not have");
  }
  return index;
}

// Groups as named, then one group of every column no group names.
arrow::Result<std::vector<std::vector<int>>> ResolveGroups(const arrow::Schema& schema,
                                                           const ObjectDesign& design) {
  std::vector<std::vector<int>> groups;
  std::set<int> grouped;
  for (const auto& group : design.column_groups) {
    if (group.columns.empty()) continue;  // "every column": the rest group below
    std::vector<int> indices;
    for (const auto& column : group.columns) {
      ARROW_ASSIGN_OR_RAISE(int index, FieldIndex(schema, column, "column groups"));
      indices.push_back(index);
      grouped.insert(index);
    }
    groups.push_back(std::move(indices));
  }
  std::vector<int> rest;
  for (int index = 0; index < schema.num_fields(); ++index) {
    if (!grouped.count(index)) rest.push_back(index);
  }
  if (!rest.empty() || groups.empty()) groups.push_back(std::move(rest));
  return groups;
}

arrow::Result<std::shared_ptr<arrow::Table>> Sorted(const std::shared_ptr<arrow::Table>& table,
                                                    const std::vector<SortKey>& keys,
                                                    arrow::MemoryPool* pool) {
  if (keys.empty()) return table;
  std::vector<arrow::compute::SortKey> sort_keys;
  for (const auto& key : keys) {
    ARROW_RETURN_NOT_OK(FieldIndex(*table->schema(), key.column, "sort order").status());
    sort_keys.emplace_back(key.column, key.descending ? arrow::compute::SortOrder::Descending
                                                      : arrow::compute::SortOrder::Ascending);
  }
  arrow::compute::ExecContext context(pool);
  ARROW_ASSIGN_OR_RAISE(
      auto indices, arrow::compute::SortIndices(arrow::Datum(table),
                                                arrow::compute::SortOptions(sort_keys), &context));
  ARROW_ASSIGN_OR_RAISE(auto taken,
                        arrow::compute::Take(arrow::Datum(table), arrow::Datum(indices),
                                             arrow::compute::TakeOptions::Defaults(), &context));
  return taken.table();
}

arrow::Compression::type Codec(const std::string& compression, ObjectFormat format) {
  if (compression == "zstd") return arrow::Compression::ZSTD;
  if (compression == "lz4") {
    return format == ObjectFormat::kParquet ? arrow::Compression::LZ4
                                            : arrow::Compression::LZ4_FRAME;
  }
  return arrow::Compression::UNCOMPRESSED;
}

// Each writer writes the data, then the checksum table, then its footer.
arrow::Status WriteParquet(const arrow::Table& table, const ObjectDesign& design,
                           arrow::MemoryPool* pool, ChecksummingSink* sink) {
  // Page checksums: every reader verifies them, so a flipped bit is an error, not a wrong answer.
  // Decimals of precision <= 18 as INT32/INT64: decoded ~6x faster than fixed-length binary.
  // No page index: no reader here uses it, and it would lie in the tail every plain read reads.
  auto properties = parquet::WriterProperties::Builder()
                        .compression(Codec(design.compression, ObjectFormat::kParquet))
                        ->disable_write_page_index()
                        ->enable_page_checksum()
                        ->enable_store_decimal_as_integer()
                        ->memory_pool(pool)
                        ->build();
  // The Arrow schema in the footer keeps types Parquet cannot name (zones, dictionaries).
  auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  std::shared_ptr<arrow::io::OutputStream> borrowed(sink, [](arrow::io::OutputStream*) {});
  ARROW_ASSIGN_OR_RAISE(
      auto writer, parquet::arrow::FileWriter::Open(*table.schema(), pool, borrowed, properties,
                                                    arrow_properties));
  ARROW_RETURN_NOT_OK(writer->WriteTable(table, design.row_group_size));
  ARROW_RETURN_NOT_OK(sink->WriteTable());  // the footer's offsets pass it by
  return writer->Close();
}

arrow::Status WriteIpc(const arrow::Table& table, const ObjectDesign& design,
                       arrow::MemoryPool* pool, ChecksummingSink* sink) {
  auto options = arrow::ipc::IpcWriteOptions::Defaults();
  options.memory_pool = pool;
  auto codec = Codec(design.compression, ObjectFormat::kIpc);
  if (codec != arrow::Compression::UNCOMPRESSED) {
    ARROW_ASSIGN_OR_RAISE(options.codec, arrow::util::Codec::Create(codec));
  }
  std::shared_ptr<arrow::io::OutputStream> borrowed(sink, [](arrow::io::OutputStream*) {});
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeFileWriter(borrowed, table.schema(), options));
  ARROW_RETURN_NOT_OK(writer->WriteTable(table, design.row_group_size));
  ARROW_RETURN_NOT_OK(sink->WriteTable());  // the footer's blocks pass it by
  return writer->Close();
}

// An extent's bytes and their checksums.
arrow::Result<std::pair<std::shared_ptr<arrow::Buffer>, ExtentChecksums>> EncodeGroup(
    const arrow::Table& table, const ObjectDesign& design, arrow::MemoryPool* pool) {
  // Rows go in fixed blocks of kRowsPerBlock (row_encoder.h), without compression.
  if (design.format == ObjectFormat::kRows) {
    ARROW_ASSIGN_OR_RAISE(auto rows, EncodeRows(table, pool));
    auto checksums = WholeExtentChecksums(*rows);
    return std::make_pair(std::move(rows), checksums);
  }
  ARROW_ASSIGN_OR_RAISE(auto sink, ChecksummingSink::Make(kChunkBytes, pool));
  if (design.format == ObjectFormat::kParquet) {
    ARROW_RETURN_NOT_OK(WriteParquet(table, design, pool, sink.get()));
  } else {
    ARROW_RETURN_NOT_OK(WriteIpc(table, design, pool, sink.get()));
  }
  ExtentChecksums checksums;
  ARROW_ASSIGN_OR_RAISE(auto extent, sink->Finish(&checksums));
  return std::make_pair(std::move(extent), checksums);
}

}  // namespace

arrow::Result<EncodedObject> EncodeObject(const std::shared_ptr<arrow::Table>& table,
                                          const ObjectDesign& design, arrow::MemoryPool* pool) {
  ARROW_RETURN_NOT_OK(CheckDesignRequest(design));
  ARROW_ASSIGN_OR_RAISE(auto groups, ResolveGroups(*table->schema(), design));
  ARROW_ASSIGN_OR_RAISE(auto sorted, Sorted(table, design.sort_by, pool));

  EncodedObject encoded{nullptr, design};
  encoded.design.column_groups.clear();
  encoded.design.num_rows = sorted->num_rows();
  // Each group is a file of its own: its footer's offsets count from the extent's start.
  std::vector<std::shared_ptr<arrow::Buffer>> extents;
  uint64_t offset = 0;
  for (const auto& indices : groups) {
    ARROW_ASSIGN_OR_RAISE(auto group_table, sorted->SelectColumns(indices));
    ARROW_ASSIGN_OR_RAISE(auto encoded_group, EncodeGroup(*group_table, design, pool));
    auto& [extent, checksums] = encoded_group;
    ColumnGroup group{{}, offset, static_cast<uint64_t>(extent->size()), checksums};
    offset += group.length;
    // A single group of every column stays "every column" for readers.
    if (groups.size() > 1) {
      for (int index : indices) group.columns.push_back(table->schema()->field(index)->name());
    }
    encoded.design.column_groups.push_back(std::move(group));
    extents.push_back(std::move(extent));
  }
  ARROW_ASSIGN_OR_RAISE(encoded.data, arrow::ConcatenateBuffers(extents, pool));
  return encoded;
}

}  // namespace skyhook
