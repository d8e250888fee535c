#pragma once

#include <memory>
#include <string>
#include <vector>

#include <arrow/compute/expression.h>
#include <arrow/dataset/dataset.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

namespace skyhook::client {

// What one fragment (one stored object) asks of the client's execution layer:
// the rows of the object that may pass `filter`, with at least `columns`.
struct ObjectScan {
  int64_t object_index;
  arrow::compute::Expression filter;
  std::vector<std::string> columns;
  int64_t batch_size;
  // The scan's own options (metrics, pushdown mode), or null when the scan
  // came from a pyarrow entry point that knows nothing of skyhook.
  std::shared_ptr<arrow::dataset::FragmentScanOptions> scan_options;
};

// Runs an object's scan where the placement policy says (in storage or at the
// client). Called from Arrow's I/O threads.
class ObjectScanHandler {
 public:
  virtual ~ObjectScanHandler() = default;
  virtual arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Scan(const ObjectScan& scan) = 0;
};

}  // namespace skyhook::client
