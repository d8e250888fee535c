// hash_sum of decimal128 values in 128-bit integer additions. Arrow 26 adds
// grouped decimals through its Decimal128 class (an eighth of Q1's storage
// CPU with the additions its operator+ makes); this kernel keeps Arrow's
// semantics — output type, options (skip_nulls, min_count), wrapping on
// overflow, partial states merged — with one machine addition per value.
#pragma once

#include <arrow/compute/registry.h>
#include <arrow/status.h>

namespace skyhook {

/// Replaces, in registry, Arrow's hash_sum with one whose decimal128 kernel
/// is this file's; every other input type keeps Arrow's kernel.
arrow::Status ReplaceGroupedDecimalSum(arrow::compute::FunctionRegistry* registry);

}  // namespace skyhook
