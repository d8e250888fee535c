#include "client/arrow_dataset/object_fragment.h"

#include <set>
#include <string>

#include <arrow/compute/expression.h>
#include <arrow/dataset/scanner.h>
#include <arrow/io/interfaces.h>
#include <arrow/util/async_generator.h>
#include <arrow/util/thread_pool.h>
#include "skyhook/storage/statistics/nan_safe_simplify.h"

namespace skyhook::client {

using arrow::dataset::RecordBatchGenerator;
using arrow::dataset::ScanOptions;

ObjectFragment::ObjectFragment(int64_t object_index, int64_t num_rows,
                               arrow::compute::Expression guarantee,
                               std::shared_ptr<arrow::Schema> schema,
                               std::shared_ptr<ObjectScanHandler> handler)
    : Fragment(std::move(guarantee), std::move(schema)),
      object_index_(object_index),
      num_rows_(num_rows),
      handler_(std::move(handler)) {}

std::string ObjectFragment::ToString() const {
  return "skyhook object " + std::to_string(object_index_);
}

std::shared_ptr<ObjectFragment> ObjectFragment::WithoutGuarantee() const {
  return std::make_shared<ObjectFragment>(object_index_, num_rows_, arrow::compute::literal(true),
                                          given_physical_schema_, handler_);
}

arrow::Result<std::shared_ptr<arrow::Schema>> ObjectFragment::ReadPhysicalSchemaImpl() {
  return given_physical_schema_;
}

arrow::Result<ObjectScan> ObjectFragment::MakeScan(const ScanOptions& options) const {
  ObjectScan scan{
      object_index_, options.filter, {}, options.batch_size, options.fragment_scan_options};
  const arrow::Schema& dataset_schema = *options.dataset_schema;
  auto stored = [&](const arrow::FieldRef& ref) -> arrow::Result<std::string> {
    ARROW_ASSIGN_OR_RAISE(arrow::FieldPath path, ref.FindOne(dataset_schema));
    return dataset_schema.field(path.indices().front())->name();
  };
  // Top-level columns only: storage selects whole columns; Arrow picks nested
  // fields out of them afterwards. A column of a widened dataset schema that the
  // object lacks is read as nulls by Arrow, so it is known to be null here.
  std::set<std::string> seen;
  arrow::compute::Expression guarantee = partition_expression_;
  for (const arrow::FieldRef& ref : options.MaterializedFields()) {
    ARROW_ASSIGN_OR_RAISE(std::string name, stored(ref));
    if (!seen.insert(name).second) continue;
    if (given_physical_schema_->GetFieldIndex(name) < 0) {
      guarantee =
          arrow::compute::and_(guarantee, arrow::compute::is_null(arrow::compute::field_ref(name)));
    } else {
      scan.columns.push_back(name);
    }
  }
  // What the guarantee settles need not be checked again in storage.
  auto simplified = NanSafeSimplify(scan.filter, guarantee);
  if (simplified.ok()) scan.filter = *std::move(simplified);
  // A filter still naming a column the object lacks is left to Arrow's own filter.
  for (const arrow::FieldRef& ref : arrow::compute::FieldsInExpression(scan.filter)) {
    ARROW_ASSIGN_OR_RAISE(std::string name, stored(ref));
    if (given_physical_schema_->GetFieldIndex(name) < 0) {
      scan.filter = arrow::compute::literal(true);
      break;
    }
  }
  return scan;
}

arrow::Result<RecordBatchGenerator> ObjectFragment::ScanBatchesAsync(
    const std::shared_ptr<ScanOptions>& options) {
  ARROW_ASSIGN_OR_RAISE(ObjectScan scan, MakeScan(*options));
  // The handler blocks on storage: it runs on the I/O pool, and the batches
  // continue on the CPU pool like those of Arrow's own formats.
  auto* io_executor = arrow::io::default_io_context().executor();
  auto reply = arrow::DeferNotOk(io_executor->Submit(
      [handler = handler_, scan = std::move(scan)]() -> arrow::Result<arrow::RecordBatchVector> {
        ARROW_ASSIGN_OR_RAISE(auto reader, handler->Scan(scan));
        return reader->ToRecordBatches();
      }));
  auto batches = reply.Then([](const arrow::RecordBatchVector& batches) -> RecordBatchGenerator {
    return arrow::MakeVectorGenerator(batches);
  });
  return arrow::MakeTransferredGenerator(arrow::MakeFromFuture(std::move(batches)),
                                         arrow::internal::GetCpuThreadPool());
}

arrow::Future<std::optional<int64_t>> ObjectFragment::CountRows(
    arrow::compute::Expression predicate, const std::shared_ptr<ScanOptions>& options) {
  auto simplified = NanSafeSimplify(std::move(predicate), partition_expression_);
  if (simplified.ok() && *simplified == arrow::compute::literal(true)) {
    return std::optional<int64_t>(num_rows_);
  }
  return std::optional<int64_t>();
}

}  // namespace skyhook::client
