// Arrow's compute functions with storage's own kernels for decimal128
// arithmetic and comparisons. Arrow 26 runs these through its generic
// Decimal128 class (sign handling, a Status per value); decimals that come
// from Parquet INT64 (precision <= 18) fit 64 bits, so the sums, differences
// and products of Q1's measures are one machine operation each, exact in
// 128 bits. A batch holding a value beyond 64 bits is handed to Arrow's own
// kernel, so results are Arrow's, bit for bit, for every input.
#pragma once

#include <arrow/compute/registry.h>
#include <arrow/result.h>

namespace skyhook {

/// Arrow's default function registry with add, subtract, multiply (and their
/// _checked forms) and the six comparisons of two decimal128 values replaced,
/// and hash_sum of decimal128 (grouped_decimal_sum.h). Dispatch, implicit
/// casts and output types are Arrow's own.
arrow::Result<arrow::compute::FunctionRegistry*> StorageFunctionRegistry();

}  // namespace skyhook
