#pragma once

#include <memory>
#include <string>

#include <arrow/dataset/dataset.h>

#include "client/arrow_dataset/object_scan_handler.h"

namespace skyhook::client {

// One stored object of a dataset. Its partition expression is what the
// manifest's statistics guarantee of every row, so Arrow prunes it.
class ObjectFragment : public arrow::dataset::Fragment {
 public:
  ObjectFragment(int64_t object_index, int64_t num_rows, arrow::compute::Expression guarantee,
                 std::shared_ptr<arrow::Schema> schema, std::shared_ptr<ObjectScanHandler> handler);

  arrow::Result<arrow::dataset::RecordBatchGenerator> ScanBatchesAsync(
      const std::shared_ptr<arrow::dataset::ScanOptions>& options) override;

  // Answered from the manifest when the predicate holds for every row.
  arrow::Future<std::optional<int64_t>> CountRows(
      arrow::compute::Expression predicate,
      const std::shared_ptr<arrow::dataset::ScanOptions>& options) override;

  std::string type_name() const override { return "skyhook"; }
  std::string ToString() const override;

  int64_t object_index() const { return object_index_; }
  // The same object without its statistics' guarantee, for a filter Arrow
  // would misjudge against it (NanSafeSimplify): nothing is ruled out.
  std::shared_ptr<ObjectFragment> WithoutGuarantee() const;

 protected:
  arrow::Result<std::shared_ptr<arrow::Schema>> ReadPhysicalSchemaImpl() override;

 private:
  arrow::Result<ObjectScan> MakeScan(const arrow::dataset::ScanOptions& options) const;

  int64_t object_index_;
  int64_t num_rows_;
  std::shared_ptr<ObjectScanHandler> handler_;
};

}  // namespace skyhook::client
