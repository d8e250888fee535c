// The Python extension of the embedded store: runs the storage-side methods on
// objects that are files, with the GIL released so a thread pool can scan many
// objects at once, and on objects a client holds in memory (the client-side
// transform).
#include <filesystem>
#include <memory>
#include <string>

#include <arrow/buffer.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "file_object_context.h"
#include "memory_object.h"
#include "skyhook/protocol/frame.h"
#include "skyhook/storage/methods/method.h"

namespace nb = nanobind;

namespace {

// The store's omap database, beside its objects directory (omap_database.h).
std::string OmapDatabasePath(const std::string& object_path) {
  return (std::filesystem::path(object_path).parent_path().parent_path() / "omap.sqlite").string();
}

nb::bytes Bytes(const arrow::Buffer& buffer) {
  return nb::bytes(reinterpret_cast<const char*>(buffer.data()),
                   static_cast<size_t>(buffer.size()));
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
  return Bytes(*reply);
}

// Runs a method on an object the caller holds (its bytes and attributes):
// the reply, then the object's bytes and attributes afterwards.
std::tuple<nb::bytes, nb::bytes, std::map<std::string, nb::bytes>> CallInMemory(
    nb::bytes data, const std::map<std::string, nb::bytes>& attributes,
    const std::string& method_name, nb::bytes request) {
  const skyhook::MethodInfo* method = skyhook::FindMethod(method_name);
  if (method == nullptr) {
    throw nb::value_error(("unknown storage method '" + method_name + "'").c_str());
  }
  auto request_buffer = std::make_shared<arrow::Buffer>(
      reinterpret_cast<const uint8_t*>(request.c_str()), static_cast<int64_t>(request.size()));
  std::map<std::string, std::string> before;
  for (const auto& [name, value] : attributes)
    before.emplace(name, std::string(value.c_str(), value.size()));
  // A view of the caller's bytes, which outlive the call.
  skyhook::MemoryObject object(
      std::make_shared<arrow::Buffer>(reinterpret_cast<const uint8_t*>(data.c_str()),
                                      static_cast<int64_t>(data.size())),
      std::move(before));
  std::shared_ptr<arrow::Buffer> reply;
  {
    nb::gil_scoped_release release;
    reply = skyhook::RunMethod(*method, &object, request_buffer);
  }
  std::map<std::string, nb::bytes> after;
  for (const auto& [name, value] : object.attributes()) {
    after.emplace(name, nb::bytes(value.data(), value.size()));
  }
  return {Bytes(*reply), Bytes(*object.bytes()), std::move(after)};
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
  m.def("call_in_memory", &CallInMemory, nb::arg("data"), nb::arg("attributes"), nb::arg("method"),
        nb::arg("request"),
        "Run a storage method on an object held in memory; returns (reply, bytes, attributes).");
  m.def("methods", &MethodNames, "Names of the storage-side methods.");
}
