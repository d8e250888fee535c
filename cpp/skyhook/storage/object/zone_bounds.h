// What is known of one column's values in one zone (object_reader.h): the
// bounds a scan skips zones by, from either source — the statistics `analyze`
// keeps in the omap, or the format's own metadata (Parquet footers).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <arrow/scalar.h>
#include <parquet/arrow/reader.h>

namespace skyhook {

struct ColumnBounds {
  /// Every non-null value v has min <= v <= max (both set, of the column's
  /// type), or nothing is known of the values (both null).
  std::shared_ptr<arrow::Scalar> min;
  std::shared_ptr<arrow::Scalar> max;
  /// The zone's null count, or -1: not known to be 0 or all of the zone's rows.
  int64_t null_count = -1;
  /// NaN values may lie outside [min, max] (Parquet leaves them out of its
  /// statistics and does not count them).
  bool may_hold_nan = false;
};

/// min <= max, which also refuses NaN (no comparison with it holds).
bool Ordered(const std::shared_ptr<arrow::Scalar>& min, const std::shared_ptr<arrow::Scalar>& max);

/// The bounds a Parquet footer states for top-level field `field` (of Arrow
/// type `type`) in each row group: nullopt where it states nothing usable.
/// The footer is hostile: values of another type than the column's, invalid
/// (bad UTF-8, a decimal beyond its precision), NaN, min > max, or a null
/// count outside the row group are not used; an unreadable footer gives
/// nullopt everywhere.
std::vector<std::optional<ColumnBounds>> RowGroupBounds(const parquet::arrow::FileReader& reader,
                                                        int field, const arrow::DataType& type);

/// Bounds of the rows [first_row, first_row + num_rows) from bounds of zones
/// that cover them (zone_rows: the rows of each zone, in order): a zone's
/// min/max hold for every part of it, its null count only in part.
std::optional<ColumnBounds> BoundsOfRows(const std::vector<std::optional<ColumnBounds>>& zones,
                                         const std::vector<int64_t>& zone_rows, int64_t first_row,
                                         int64_t num_rows);

}  // namespace skyhook
