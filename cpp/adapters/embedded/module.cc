// The Python extension of the embedded store: runs the storage-side methods on
// objects that are files, with the GIL released so a thread pool can scan many
// objects at once; and encodes row objects for the client's writers.
#include <filesystem>
#include <memory>
#include <string>

#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/table.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "file_object_context.h"
#include "skyhook/protocol/frame.h"
#include "skyhook/storage/methods/method.h"
#include "skyhook/storage/object/row_encoder.h"

namespace nb = nanobind;

namespace {

// The store's omap database, beside its objects directory (omap_database.h).
std::string OmapDatabasePath(const std::string& object_path) {
  return (std::filesystem::path(object_path).parent_path().parent_path() / "omap.sqlite").string();
}

nb::bytes Call(const std::string& object_path, const std::string& method_name, nb::bytes request) {
  const skyhook::MethodInfo* method = skyhook::FindMethod(method_name);
  if (method == nullptr) {
    throw nb::value_error(("unknown storage method '" + method_name + "'").c_str());
  }
  auto request_buffer = std::make_shared<arrow::Buffer>(
      reinterpret_cast<const uint8_t*>(request.c_str()), static_cast<int64_t>(request.size()));
  std::shared_ptr<arrow::Buffer> reply;
  {
    nb::gil_scoped_release release;
    skyhook::FileObjectContext object(object_path, OmapDatabasePath(object_path));
    reply = skyhook::RunMethod(*method, &object, request_buffer);
  }
  return nb::bytes(reinterpret_cast<const char*>(reply->data()),
                   static_cast<size_t>(reply->size()));
}

arrow::Result<std::shared_ptr<arrow::Buffer>> EncodeStream(std::shared_ptr<arrow::Buffer> stream) {
  arrow::io::BufferReader input(std::move(stream));
  auto batches = arrow::ipc::RecordBatchStreamReader::Open(&input);
  if (!batches.ok()) {
    return skyhook::Error(skyhook::ErrorCode::kInvalidRequest,
                          "not an Arrow IPC stream: ", batches.status().message());
  }
  ARROW_ASSIGN_OR_RAISE(auto table, (*batches)->ToTable());
  return skyhook::EncodeRows(*table, arrow::default_memory_pool());
}

// The rows of an Arrow IPC stream as a row object (row_format.fbs). A type the
// format cannot store raises skyhook.errors.InvalidRequestError naming the column.
nb::bytes EncodeRows(nb::bytes ipc_stream) {
  auto stream =
      std::make_shared<arrow::Buffer>(reinterpret_cast<const uint8_t*>(ipc_stream.c_str()),
                                      static_cast<int64_t>(ipc_stream.size()));
  arrow::Result<std::shared_ptr<arrow::Buffer>> encoded;
  {
    nb::gil_scoped_release release;
    encoded = EncodeStream(std::move(stream));
  }
  if (!encoded.ok()) {
    auto error = nb::module_::import_("skyhook.errors").attr("InvalidRequestError");
    PyErr_SetString(error.ptr(), encoded.status().message().c_str());
    throw nb::python_error();
  }
  return nb::bytes(reinterpret_cast<const char*>((*encoded)->data()),
                   static_cast<size_t>((*encoded)->size()));
}

std::vector<std::string> MethodNames() {
  std::vector<std::string> names;
  for (const auto& info : skyhook::kMethods) names.emplace_back(info.name);
  return names;
}

}  // namespace

NB_MODULE(_embedded, m) {
  m.doc() = "Skyhook storage-side methods over files of the embedded store";
  m.attr("PROTOCOL_VERSION") = skyhook::kProtocolVersion;
  m.def("call", &Call, nb::arg("object_path"), nb::arg("method"), nb::arg("request"),
        "Run a storage method on one object file; returns the encoded reply.");
  m.def("methods", &MethodNames, "Names of the storage-side methods.");
  m.def("encode_rows", &EncodeRows, nb::arg("ipc_stream"),
        "The rows of an Arrow IPC stream as a row object (format 'rows').");
}
