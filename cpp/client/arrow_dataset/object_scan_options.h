#pragma once

#include <string>

#include <arrow/dataset/dataset.h>
#include <arrow/python/common.h>

namespace skyhook::client {

// Per-scan options a skyhook scanner hands its fragments: the Python scan
// context that owns the scan's placement state and metrics.
class ObjectScanOptions : public arrow::dataset::FragmentScanOptions {
 public:
  explicit ObjectScanOptions(PyObject* context) : context_(context) { Py_INCREF(context); }

  std::string type_name() const override { return "skyhook"; }
  PyObject* context() const { return context_.obj(); }

 private:
  arrow::py::OwnedRefNoGIL context_;
};

}  // namespace skyhook::client
