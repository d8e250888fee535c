// A request's expressions bound again with a call's exec context. Arrow's
// Substrait consumer binds what it decodes with Arrow's default function
// registry; a storage call evaluates with its own (storage's decimal kernels,
// decimal_kernels.h), so the kernels are looked up once more there.
#pragma once

#include <arrow/compute/exec.h>
#include <arrow/engine/substrait/relation.h>
#include <arrow/result.h>

namespace skyhook {

/// The same expressions over the same schema, each call's kernel dispatched
/// by context's registry (the implicit casts of the first binding are kept as
/// explicit calls, so types are unchanged).
arrow::Result<arrow::engine::BoundExpressions> RebindExpressions(
    const arrow::engine::BoundExpressions& bound, arrow::compute::ExecContext* context);

}  // namespace skyhook
