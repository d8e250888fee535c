#include "client/arrow_dataset/python_scan_handler.h"

namespace skyhook::client {

PythonScanHandler::PythonScanHandler(PyObject* handler, PythonScanCallback callback)
    : handler_(handler), callback_(callback) {
  Py_INCREF(handler);
}

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> PythonScanHandler::Scan(
    const ObjectScan& scan) {
  return arrow::py::SafeCallIntoPython(
      [&]() -> arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> {
        std::shared_ptr<arrow::RecordBatchReader> reader;
        callback_(handler_.obj(), scan, &reader);
        ARROW_RETURN_NOT_OK(arrow::py::CheckPyError());
        if (reader == nullptr) {
          return arrow::Status::Invalid("the scan handler returned no reader");
        }
        return reader;
      });
}

}  // namespace skyhook::client
