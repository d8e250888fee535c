// A scan request's filter and projection applied to batches of an object's
// rows: the scan method returns what they give, the transform method keeps it
// as the object's new rows (a delete or update made in storage).
#pragma once

#include <memory>
#include <optional>

#include <arrow/compute/exec.h>
#include <arrow/datum.h>
#include <arrow/engine/substrait/relation.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/status.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/object_columns.h"

namespace skyhook {

/// The object's fields an expression set reads. Each must exist in the object
/// with the type the client bound the expression to, or one it converts to.
arrow::Status AddReferencedFields(const arrow::engine::BoundExpressions& bound,
                                  RequestedColumns* columns);

/// The fields of its bound schema an expression set reads.
arrow::Result<arrow::FieldVector> ReferencedFields(const arrow::engine::BoundExpressions& bound);

/// The output schema of a projection: a field per named expression.
std::shared_ptr<arrow::Schema> ProjectedSchema(const arrow::engine::BoundExpressions& projection);

/// What the filter (one boolean expression) evaluates to over batch.
arrow::Result<arrow::Datum> FilterMask(const arrow::engine::BoundExpressions& filter,
                                       const std::shared_ptr<arrow::RecordBatch>& batch,
                                       arrow::compute::ExecContext* context);

/// The rows of batch the filter keeps (none given: all).
arrow::Result<std::shared_ptr<arrow::RecordBatch>> FilterRows(
    const std::optional<arrow::engine::BoundExpressions>& filter,
    const std::shared_ptr<arrow::RecordBatch>& batch, arrow::compute::ExecContext* context);

/// The projection's columns of batch, as output_schema (none given: batch).
arrow::Result<std::shared_ptr<arrow::RecordBatch>> ProjectRows(
    const std::optional<arrow::engine::BoundExpressions>& projection,
    const std::shared_ptr<arrow::RecordBatch>& batch,
    const std::shared_ptr<arrow::Schema>& output_schema, arrow::compute::ExecContext* context);

/// Evaluation errors (overflow, division by zero, bad casts) come from the
/// client's expressions, so they are the client's to fix.
template <typename T>
arrow::Result<T> AsInvalidRequest(const char* what, arrow::Result<T> result) {
  if (result.ok() || CodeOf(result.status()) != ErrorCode::kInternal) return result;
  return Error(ErrorCode::kInvalidRequest, "evaluating the ", what,
               " failed: ", result.status().message());
}

}  // namespace skyhook
