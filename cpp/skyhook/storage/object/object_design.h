// The physical design of one object: how its rows are laid out (format,
// column groups and the byte extent of each, sort order, compression), with
// its row count and a generation that every rewrite of the object raises.
// The object carries it in its `skyhook.design` attribute, so every object
// is self-describing and a dataset can hold objects of different designs.
// Encoded as a one-row Arrow IPC stream (like the protocol's headers), so
// both sides decode it with Arrow's validating reader.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "skyhook/storage/object/extent_checksums.h"
#include "skyhook/storage/object/object_context.h"

namespace skyhook {

constexpr char kDesignAttribute[] = "skyhook.design";
/// The attribute of objects written before designs: "parquet" or "ipc" (or "rows").
constexpr char kFormatAttribute[] = "skyhook.format";
constexpr int32_t kDesignVersion = 1;

enum class ObjectFormat { kRows, kIpc, kParquet };

std::string_view FormatName(ObjectFormat format);

struct SortKey {
  std::string column;
  bool descending = false;

  bool operator==(const SortKey&) const = default;
};

/// Columns stored together, in their own byte range of the object. An empty
/// column list (only as the only group) means every column of the object.
struct ColumnGroup {
  std::vector<std::string> columns;
  uint64_t offset = 0;
  uint64_t length = 0;
  /// The checksums of the extent's bytes; none in objects written before
  /// checksums (read unverified, Parquet's page checksums aside). Every group
  /// of a design has them or none, and with them the attribute a checksum of itself.
  std::optional<ExtentChecksums> checksums;

  bool operator==(const ColumnGroup&) const = default;
};

struct ObjectDesign {
  ObjectFormat format = ObjectFormat::kParquet;
  std::vector<ColumnGroup> column_groups;
  std::vector<SortKey> sort_by;
  /// "none", "lz4" or "zstd"; "unknown" for objects written before designs.
  std::string compression = "zstd";
  /// Rows per Parquet row group, IPC record batch or row block.
  int64_t row_group_size = 64 * 1024;
  /// -1 for objects written before designs (only their footer knows).
  int64_t num_rows = 0;
  int64_t generation = 0;

  bool operator==(const ObjectDesign&) const = default;
  /// Every column is in one group, as one extent over the whole object.
  bool monolithic() const;
};

/// The design's attribute value.
arrow::Result<std::shared_ptr<arrow::Buffer>> SerializeDesign(const ObjectDesign& design);

/// Decodes and checks an attribute value against the object's size:
/// kCorruptObject for anything malformed (unknown format or compression,
/// duplicate columns, extents or checksum table outside the object or
/// overlapping, a checksum of the attribute that differs).
arrow::Result<ObjectDesign> ParseDesign(std::string_view encoded, uint64_t object_size);

/// The design an object carries; objects with only a `skyhook.format`
/// attribute (written before designs) read as one extent of that format.
/// kCorruptObject when it has neither attribute or a malformed one.
arrow::Result<ObjectDesign> ReadDesign(ObjectContext* object);
/// ReadDesign with the design attribute's value already read (nullopt: none).
arrow::Result<ObjectDesign> DesignOf(ObjectContext* object,
                                     const std::optional<std::string>& encoded);

/// Checks what a writer may be asked for, before any data is read:
/// kInvalidRequest for a combination that cannot be built (a rows object in
/// several groups, a group without columns among several, a column twice, a
/// row group size outside 1 .. 2^24, an unknown compression).
arrow::Status CheckDesignRequest(const ObjectDesign& design);

/// Parses "rows", "ipc" or "parquet".
arrow::Result<ObjectFormat> ParseFormat(std::string_view name);

}  // namespace skyhook
