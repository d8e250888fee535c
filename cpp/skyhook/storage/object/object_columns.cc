#include "skyhook/storage/object/object_columns.h"

#include <arrow/array.h>
#include <arrow/compute/cast.h>

#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

using arrow::Type;

// The same bytes under another type (Array::View checks the layouts).
bool Reinterprets(const arrow::DataType& stored, const arrow::DataType& requested) {
  if (stored.id() == Type::DURATION) return requested.id() == Type::INT64;
  if (stored.id() == Type::DECIMAL256) {
    return requested.Equals(*arrow::fixed_size_binary(32));
  }
  return false;
}

bool SameDecimal(const arrow::DataType& stored, const arrow::DataType& requested) {
  const auto& from = static_cast<const arrow::DecimalType&>(stored);
  const auto& to = static_cast<const arrow::DecimalType&>(requested);
  return from.precision() == to.precision() && from.scale() == to.scale();
}

bool TimestampsConvert(const arrow::TimestampType& stored, const arrow::TimestampType& requested) {
  bool unit = stored.unit() == requested.unit() || (stored.unit() == arrow::TimeUnit::MILLI &&
                                                    requested.unit() == arrow::TimeUnit::SECOND);
  bool zone = stored.timezone() == requested.timezone() ||
              (!stored.timezone().empty() && requested.timezone() == "UTC");
  return unit && zone;
}

bool Casts(const arrow::DataType& stored, const arrow::DataType& requested) {
  switch (stored.id()) {
    case Type::DICTIONARY:
      return static_cast<const arrow::DictionaryType&>(stored).value_type()->Equals(requested);
    case Type::DECIMAL32:
    case Type::DECIMAL64:
      return requested.id() == Type::DECIMAL128 && SameDecimal(stored, requested);
    case Type::STRING_VIEW:
      return requested.id() == Type::STRING;
    case Type::BINARY_VIEW:
      return requested.id() == Type::BINARY;
    case Type::TIMESTAMP:
      return requested.id() == Type::TIMESTAMP &&
             TimestampsConvert(static_cast<const arrow::TimestampType&>(stored),
                               static_cast<const arrow::TimestampType&>(requested));
    case Type::TIME32:
      return requested.Equals(*arrow::time32(arrow::TimeUnit::SECOND)) &&
             stored.Equals(*arrow::time32(arrow::TimeUnit::MILLI));
    case Type::DATE32:
      return requested.id() == Type::DATE64;
    default:
      return false;
  }
}

}  // namespace

bool ConvertsExactly(const arrow::DataType& stored, const arrow::DataType& requested) {
  return stored.Equals(requested) || Casts(stored, requested) || Reinterprets(stored, requested);
}

arrow::Result<int> FindObjectField(const arrow::Schema& object_schema,
                                   const arrow::Field& requested) {
  int index = object_schema.GetFieldIndex(requested.name());
  if (index < 0) {
    return Error(ErrorCode::kUnknownColumn, "column '", requested.name(),
                 "' does not exist in the object");
  }
  const auto& stored = object_schema.field(index)->type();
  if (!ConvertsExactly(*stored, *requested.type())) {
    return Error(ErrorCode::kTypeMismatch, "column '", requested.name(), "' is ",
                 stored->ToString(), " in the object but the request uses ",
                 requested.type()->ToString());
  }
  return index;
}

arrow::Status RequestedColumns::Add(const arrow::Field& requested) {
  ARROW_ASSIGN_OR_RAISE(int index, FindObjectField(*object_schema_, requested));
  auto [known, added] = fields_.emplace(
      index, arrow::field(requested.name(), requested.type(), requested.nullable()));
  if (!added && !known->second->type()->Equals(*requested.type())) {
    return Error(ErrorCode::kTypeMismatch, "column '", requested.name(), "' is requested as both ",
                 known->second->type()->ToString(), " and ", requested.type()->ToString());
  }
  return arrow::Status::OK();
}

void RequestedColumns::AddAll() {
  for (int i = 0; i < object_schema_->num_fields(); ++i) {
    fields_.emplace(i, object_schema_->field(i));
  }
}

std::vector<int> RequestedColumns::indices() const {
  std::vector<int> indices;
  for (const auto& [index, field] : fields_) indices.push_back(index);
  return indices;
}

std::shared_ptr<arrow::Schema> RequestedColumns::schema() const {
  arrow::FieldVector fields;
  for (const auto& [index, field] : fields_) fields.push_back(field);
  return arrow::schema(std::move(fields));
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> AsRequested(
    const std::shared_ptr<arrow::RecordBatch>& batch,
    const std::shared_ptr<arrow::Schema>& requested, arrow::compute::ExecContext* context) {
  if (batch->num_columns() != requested->num_fields()) {
    return arrow::Status::Invalid("a batch of ", batch->num_columns(), " columns for ",
                                  requested->num_fields(), " requested");
  }
  bool converts = false;
  arrow::ArrayVector columns;
  for (int i = 0; i < batch->num_columns(); ++i) {
    auto column = batch->column(i);
    const auto& type = requested->field(i)->type();
    if (!column->type()->Equals(*type)) {
      converts = true;
      if (Reinterprets(*column->type(), *type)) {
        ARROW_ASSIGN_OR_RAISE(column, column->View(type));
      } else {
        auto cast =
            arrow::compute::Cast(*column, type, arrow::compute::CastOptions::Safe(), context);
        if (!cast.ok()) {
          return Error(ErrorCode::kTypeMismatch, "column '", requested->field(i)->name(),
                       "' does not convert exactly to ", type->ToString(), ": ",
                       cast.status().message());
        }
        column = *std::move(cast);
      }
    }
    columns.push_back(std::move(column));
  }
  if (!converts) return batch;
  return arrow::RecordBatch::Make(requested, batch->num_rows(), std::move(columns));
}

}  // namespace skyhook
