#pragma once

#include <memory>

#include <arrow/python/common.h>

#include "client/arrow_dataset/object_scan_handler.h"

namespace skyhook::client {

// Calls the client's Python execution layer. The callback (defined in Cython)
// sets a Python error on failure; it travels back to the caller unchanged.
using PythonScanCallback = void (*)(PyObject* handler, const ObjectScan& scan,
                                    std::shared_ptr<arrow::RecordBatchReader>* reader);

class PythonScanHandler : public ObjectScanHandler {
 public:
  PythonScanHandler(PyObject* handler, PythonScanCallback callback);

  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Scan(const ObjectScan& scan) override;

 private:
  arrow::py::OwnedRefNoGIL handler_;
  PythonScanCallback callback_;
};

}  // namespace skyhook::client
