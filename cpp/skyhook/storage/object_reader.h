// Reads the partition stored in one object (Parquet or Arrow IPC file, named by
// the object's skyhook.format attribute) slice by slice, decoding only the
// columns asked for.
#pragma once

#include <memory>
#include <vector>

#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type.h>

#include "skyhook/storage/object_context.h"
#include "skyhook/storage/object_file.h"

namespace skyhook {

constexpr char kFormatAttribute[] = "skyhook.format";

class ObjectReader {
 public:
  virtual ~ObjectReader() = default;

  /// Errors: kNotFound when the object is missing, kCorruptObject when it is
  /// not a readable partition of the format it claims.
  static arrow::Result<std::unique_ptr<ObjectReader>> Open(ObjectContext* object);

  virtual std::shared_ptr<arrow::Schema> schema() const = 0;
  virtual int64_t num_rows() const = 0;

  /// Batches of at most batch_size rows (and never more than one Parquet row
  /// group) holding the given top-level fields.
  virtual arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ReadFields(
      const std::vector<int>& field_indices, int64_t batch_size) = 0;

  int64_t bytes_read() const { return file_->bytes_read(); }

 protected:
  explicit ObjectReader(std::shared_ptr<ObjectFile> file) : file_(std::move(file)) {}
  arrow::Result<std::shared_ptr<arrow::Schema>> FieldsSchema(
      const std::vector<int>& field_indices) const;
  std::shared_ptr<ObjectFile> file_;
};

}  // namespace skyhook
