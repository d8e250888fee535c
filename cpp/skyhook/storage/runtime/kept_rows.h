// The rows a filter keeps, from the mask it evaluated to: storage's scans and
// the embedded store's plain reads filter batches the same way.
#pragma once

#include <memory>

#include <arrow/compute/exec.h>
#include <arrow/datum.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

namespace skyhook {

/// The rows of batch where mask (a boolean array of its length, or a scalar
/// for every row) is true; null drops the row.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> KeptRows(
    const std::shared_ptr<arrow::RecordBatch>& batch, const arrow::Datum& mask,
    arrow::compute::ExecContext* context);

}  // namespace skyhook
