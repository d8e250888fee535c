#include "skyhook/storage/statistics/table_statistics.h"

namespace skyhook {

TableStatistics::TableStatistics(std::shared_ptr<arrow::Schema> schema,
                                 arrow::compute::ExecContext* context)
    : schema_(std::move(schema)) {
  for (const auto& field : schema_->fields()) columns_.emplace_back(field->type(), context);
}

arrow::Status TableStatistics::Update(const arrow::RecordBatch& batch) {
  if (batch.num_columns() != static_cast<int>(columns_.size())) {
    return arrow::Status::Invalid("a batch of ", batch.num_columns(), " columns for statistics of ",
                                  columns_.size());
  }
  num_rows_ += batch.num_rows();
  for (int i = 0; i < batch.num_columns(); ++i) {
    ARROW_RETURN_NOT_OK(columns_[i].Update(batch.column(i)));
  }
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> TableStatistics::Finish() const {
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (size_t i = 0; i < columns_.size(); ++i) {
    ARROW_ASSIGN_OR_RAISE(auto statistics, columns_[i].Finish());
    fields.push_back(arrow::field(schema_->field(static_cast<int>(i))->name(), statistics->type()));
    arrays.push_back(std::move(statistics));
  }
  return arrow::RecordBatch::Make(arrow::schema(fields, schema_->metadata()), 1, arrays);
}

}  // namespace skyhook
