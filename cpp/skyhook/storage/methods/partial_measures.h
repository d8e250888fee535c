// Substrait measures of skyhook's own: partial states of the client's aggregate
// functions (python/skyhook/plan/aggregate_functions.py) that Arrow 26's
// Substrait consumer has no mapping for, though Acero has the hash kernels.
#pragma once

#include <arrow/engine/substrait/extension_set.h>

namespace skyhook {

/// The extension URI the client declares these measures under.
inline constexpr char kPartialMeasuresUri[] = "urn:skyhook:partial_measures";

/// Quantiles per object and group of the quantile_sketch measure: the
/// midpoints (i + 0.5) / kSketchQuantiles, each standing for an equal share
/// of the group's values (the client merges them as weighted points).
inline constexpr int kSketchQuantiles = 100;

/// Arrow's default registry and these measures: product, any, all,
/// count_all (the rows of the group, nulls too) and quantile_sketch.
arrow::Result<const arrow::engine::ExtensionIdRegistry*> PartialMeasureRegistry();

}  // namespace skyhook
