// Matching the columns a request was bound to against the object's own schema.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include <arrow/compute/exec.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type.h>

namespace skyhook {

/// Whether a request may name an object's column of type `stored` by type
/// `requested`. Substrait cannot name every Arrow type, and Parquet stores
/// some types otherwise (time32[s] and timestamp[s] in milliseconds, date64
/// as date32), so a request names the column by its dataset's type or by what
/// Substrait carries of it; storage converts exactly: a dictionary decoded to
/// its values, decimal32/64 widened to decimal128, a zoned timestamp as UTC,
/// views as their plain types, milliseconds to the seconds they were written
/// as (a remainder is an error), date32 to date64; duration as int64 and
/// decimal256 as fixed_size_binary[32] reinterpret the same bytes.
bool ConvertsExactly(const arrow::DataType& stored, const arrow::DataType& requested);

/// The object's index of the field a request names, checked by name and type
/// (kUnknownColumn, kTypeMismatch).
arrow::Result<int> FindObjectField(const arrow::Schema& object_schema,
                                   const arrow::Field& requested);

/// The object's columns one request reads, each with the one type the request
/// names it by.
class RequestedColumns {
 public:
  explicit RequestedColumns(std::shared_ptr<arrow::Schema> object_schema)
      : object_schema_(std::move(object_schema)) {}

  /// Adds the field a request names (kUnknownColumn, kTypeMismatch also when
  /// the request names one column by two types).
  arrow::Status Add(const arrow::Field& requested);
  /// Every column of the object, as stored.
  void AddAll();

  /// The object's field indices, ascending: what ReadFields decodes.
  std::vector<int> indices() const;
  /// The schema of the decoded columns once converted.
  std::shared_ptr<arrow::Schema> schema() const;

 private:
  std::shared_ptr<arrow::Schema> object_schema_;
  std::map<int, std::shared_ptr<arrow::Field>> fields_;
};

/// batch (columns as the object stores them) with the columns of `requested`
/// (the same number, in order), converted as ConvertsExactly permits.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> AsRequested(
    const std::shared_ptr<arrow::RecordBatch>& batch,
    const std::shared_ptr<arrow::Schema>& requested, arrow::compute::ExecContext* context);

}  // namespace skyhook
