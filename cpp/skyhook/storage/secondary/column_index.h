// An index on one column of an object: its non-null values sorted with their
// row positions, in the omap as blocks of about 64 KiB (omap lives in
// RocksDB, where many small values are cheap and large ones are not) plus a
// header of each block's first and last key:
//   skyhook.index.v1.<column>          header: {first, last (the column's type), rows int64}
//                                      a row per block; metadata: identity, zone row counts
//   skyhook.index.v1.<column>\n<n>     block n: {key, row int64}, sorted by key, then row
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/compute/expression.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

#include "skyhook/storage/object/object_context.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/runtime/call_resources.h"

namespace skyhook {

constexpr int64_t kIndexBlockBytes = 64 * 1024;

/// Whether a column of this type can be indexed; the reason when not.
std::optional<std::string> NotIndexable(const arrow::DataType& type);

/// The omap key of an index's header, and of its block n.
std::string IndexHeaderKey(const std::string& column);
std::string IndexBlockKey(const std::string& column, int64_t block);

/// An index's omap entries (key, value), built from the object's column.
arrow::Result<std::map<std::string, std::string>> BuildColumnIndex(ObjectReader* reader, int column,
                                                                   const std::string& identity,
                                                                   CallResources* resources);

/// What a lookup found: object rows (ascending) and where they lie.
struct IndexMatches {
  std::vector<int64_t> rows;
  std::vector<int64_t> zone_rows;  // row count of each zone, in order
  int64_t omap_bytes = 0;          // of the blocks read
};

/// The rows whose key satisfies `predicate` (bound to {key}), looking only at
/// blocks that may hold keys in [low, high] (unbounded where null). nullopt
/// when the column has no index describing the current data (identity).
arrow::Result<std::optional<IndexMatches>> LookUpIndex(
    ObjectContext* object, const std::string& column, const std::string& identity,
    const arrow::compute::Expression& predicate, const std::shared_ptr<arrow::Scalar>& low,
    const std::shared_ptr<arrow::Scalar>& high, arrow::compute::ExecContext* context);

/// The omap keys of the column's index entries (header and blocks) there are.
arrow::Result<std::vector<std::string>> ColumnIndexKeys(ObjectContext* object,
                                                        const std::string& column);

}  // namespace skyhook
