#include "skyhook/storage/methods/row_expressions.h"

#include <utility>

#include <arrow/array/util.h>
#include <arrow/compute/expression.h>
#include <arrow/scalar.h>

#include "skyhook/storage/runtime/kept_rows.h"

namespace skyhook {
namespace {

arrow::Result<std::shared_ptr<arrow::Array>> Evaluate(
    const arrow::compute::Expression& expression, const arrow::Schema& bound_schema,
    const std::shared_ptr<arrow::RecordBatch>& batch, arrow::compute::ExecContext* context) {
  ARROW_ASSIGN_OR_RAISE(auto datum, arrow::compute::ExecuteScalarExpression(
                                        expression, bound_schema, batch, context));
  if (datum.is_array()) return datum.make_array();
  return arrow::MakeArrayFromScalar(*datum.scalar(), batch->num_rows(), context->memory_pool());
}

}  // namespace

arrow::Result<arrow::FieldVector> ReferencedFields(const arrow::engine::BoundExpressions& bound) {
  arrow::FieldVector fields;
  for (const auto& named : bound.named_expressions) {
    for (const auto& ref : arrow::compute::FieldsInExpression(named.expression)) {
      ARROW_ASSIGN_OR_RAISE(auto path, ref.FindOne(*bound.schema));
      fields.push_back(bound.schema->field(path[0]));
    }
  }
  return fields;
}

arrow::Status AddReferencedFields(const arrow::engine::BoundExpressions& bound,
                                  RequestedColumns* columns) {
  ARROW_ASSIGN_OR_RAISE(auto fields, ReferencedFields(bound));
  for (const auto& field : fields) ARROW_RETURN_NOT_OK(columns->Add(*field));
  return arrow::Status::OK();
}

std::shared_ptr<arrow::Schema> ProjectedSchema(const arrow::engine::BoundExpressions& projection) {
  arrow::FieldVector fields;
  for (const auto& named : projection.named_expressions) {
    fields.push_back(arrow::field(named.name, named.expression.type()->GetSharedPtr()));
  }
  return arrow::schema(std::move(fields));
}

arrow::Result<arrow::Datum> FilterMask(const arrow::engine::BoundExpressions& filter,
                                       const std::shared_ptr<arrow::RecordBatch>& batch,
                                       arrow::compute::ExecContext* context) {
  return arrow::compute::ExecuteScalarExpression(filter.named_expressions[0].expression,
                                                 *filter.schema, batch, context);
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> FilterRows(
    const std::optional<arrow::engine::BoundExpressions>& filter,
    const std::shared_ptr<arrow::RecordBatch>& batch, arrow::compute::ExecContext* context) {
  if (!filter) return batch;
  ARROW_ASSIGN_OR_RAISE(auto mask, FilterMask(*filter, batch, context));
  return KeptRows(batch, mask, context);
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ProjectRows(
    const std::optional<arrow::engine::BoundExpressions>& projection,
    const std::shared_ptr<arrow::RecordBatch>& batch,
    const std::shared_ptr<arrow::Schema>& output_schema, arrow::compute::ExecContext* context) {
  if (!projection) return batch;
  arrow::ArrayVector columns;
  for (const auto& named : projection->named_expressions) {
    ARROW_ASSIGN_OR_RAISE(auto column,
                          Evaluate(named.expression, *projection->schema, batch, context));
    columns.push_back(std::move(column));
  }
  return arrow::RecordBatch::Make(output_schema, batch->num_rows(), std::move(columns));
}

}  // namespace skyhook
