// The Python extension of the embedded store: runs the storage-side methods on
// objects that are files, with the GIL released so a thread pool can scan many
// objects at once, and on objects a client holds in memory (the client-side
// transform). It also lends the client the core's one object writer
// (EncodeObject) and its plain reads (client/plain_reads.h), so objects are
// built and plainly read by the same code that storage runs.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/c/bridge.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "client/plain_reads.h"
#include "file_object_context.h"
#include "memory_object.h"
#include "omap_database.h"
#include "skyhook/errors/error.h"
#include "skyhook/protocol/frame.h"
#include "skyhook/storage/methods/method.h"
#include "skyhook/storage/object/object_writer.h"

namespace nb = nanobind;

namespace {

// The store's omap database, beside its objects directory (omap_database.h).
std::string OmapDatabasePath(const std::string& object_path) {
  return (std::filesystem::path(object_path).parent_path().parent_path() / "omap.sqlite").string();
}

// An object's name: its file's (FileObjectContext::Name).
std::string ObjectName(const std::string& object_path) {
  return std::filesystem::path(object_path).filename().string();
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

// A failure the client maps to its skyhook error: ValueError(code, message),
// MemoryError when an allocation failed.
[[noreturn]] void Raise(const arrow::Status& status) {
  if (status.IsOutOfMemory()) throw std::bad_alloc();
  PyErr_SetObject(
      PyExc_ValueError,
      nb::make_tuple(static_cast<int>(skyhook::CodeOf(status)), status.message()).ptr());
  throw nb::python_error();
}

template <typename T>
T Checked(arrow::Result<T> result) {
  if (!result.ok()) Raise(result.status());
  return std::move(*result);
}

// Makes the target object's omap a copy of the source's (both files of one
// store); a store that never wrote an omap has nothing to copy.
void CopyOmap(const std::string& source_path, const std::string& target_path) {
  const std::string database = OmapDatabasePath(source_path);
  arrow::Status status;
  {
    nb::gil_scoped_release release;
    std::error_code error;
    if (!std::filesystem::exists(database, error)) return;
    auto omap = skyhook::OmapDatabase::Open(database);
    status =
        omap.ok() ? (*omap)->Copy(ObjectName(source_path), ObjectName(target_path)) : omap.status();
  }
  if (!status.ok()) Raise(status);
}

nb::bytes ToBytes(const arrow::Buffer& buffer) {
  return nb::bytes(reinterpret_cast<const char*>(buffer.data()),
                   static_cast<size_t>(buffer.size()));
}

// A Python object's bytes, held (and the object kept alive) while in use: as
// long as decoded columns that are views of them live, wherever they are freed.
class HeldBuffer : public arrow::Buffer {
 public:
  explicit HeldBuffer(nb::handle object) : arrow::Buffer(nullptr, 0) {
    if (PyObject_GetBuffer(object.ptr(), &view_, PyBUF_SIMPLE) != 0) throw nb::python_error();
    data_ = static_cast<const uint8_t*>(view_.buf);
    size_ = capacity_ = static_cast<int64_t>(view_.len);
  }
  ~HeldBuffer() override {
    nb::gil_scoped_acquire acquire;
    PyBuffer_Release(&view_);
  }

 private:
  Py_buffer view_{};
};

arrow::Result<std::pair<std::shared_ptr<arrow::Buffer>, std::shared_ptr<arrow::Buffer>>> Encode(
    const std::shared_ptr<arrow::Buffer>& stream, const std::string& design) {
  auto reader =
      arrow::ipc::RecordBatchStreamReader::Open(std::make_shared<arrow::io::BufferReader>(stream));
  if (!reader.ok()) {
    return skyhook::Error(
        skyhook::ErrorCode::kInvalidRequest,
        "the data to encode is not an Arrow IPC stream: ", reader.status().message());
  }
  ARROW_ASSIGN_OR_RAISE(auto table, (*reader)->ToTable());
  ARROW_ASSIGN_OR_RAISE(auto requested, skyhook::ParseDesign(design, 0));
  ARROW_ASSIGN_OR_RAISE(auto encoded,
                        skyhook::EncodeObject(table, requested, arrow::default_memory_pool()));
  ARROW_ASSIGN_OR_RAISE(auto attribute, skyhook::SerializeDesign(encoded.design));
  return std::make_pair(encoded.data, attribute);
}

std::pair<nb::bytes, nb::bytes> EncodeObject(nb::bytes stream, nb::bytes design) {
  auto data = std::make_shared<arrow::Buffer>(reinterpret_cast<const uint8_t*>(stream.c_str()),
                                              static_cast<int64_t>(stream.size()));
  std::string requested(design.c_str(), design.size());
  arrow::Result<std::pair<std::shared_ptr<arrow::Buffer>, std::shared_ptr<arrow::Buffer>>> encoded;
  {
    nb::gil_scoped_release release;
    encoded = Encode(data, requested);
  }
  auto [object, attribute] = Checked(std::move(encoded));
  return {ToBytes(*object), ToBytes(*attribute)};
}

// An Arrow C stream in a capsule (the PyCapsule interface pyarrow imports);
// released here if nobody took it.
nb::capsule StreamCapsule(const std::shared_ptr<arrow::RecordBatchReader>& batches) {
  auto stream = std::make_unique<ArrowArrayStream>();
  auto exported = arrow::ExportRecordBatchReader(batches, stream.get());
  if (!exported.ok()) Raise(exported);
  return nb::capsule(stream.release(), "arrow_array_stream", [](void* pointer) noexcept {
    auto* stream = static_cast<ArrowArrayStream*>(pointer);
    if (stream->release != nullptr) stream->release(stream);
    delete stream;
  });
}

std::optional<std::string> Text(const std::optional<nb::bytes>& value) {
  if (!value) return std::nullopt;
  return std::string(value->c_str(), value->size());
}

void AddParts(skyhook::ReadParts* object, nb::list parts) {
  for (nb::handle part : parts) {
    auto pair = nb::cast<nb::tuple>(part);
    object->Add(nb::cast<uint64_t>(pair[0]), std::make_shared<HeldBuffer>(pair[1]));
  }
}

std::shared_ptr<arrow::Buffer> BufferOf(const std::optional<nb::bytes>& bytes) {
  return bytes ? arrow::Buffer::FromString(std::string(bytes->c_str(), bytes->size())) : nullptr;
}

std::tuple<nb::bytes, nb::capsule, int64_t, int64_t, bool> ReadObject(
    uint64_t size, std::optional<nb::bytes> design, std::optional<nb::bytes> format, nb::list parts,
    std::optional<std::vector<std::string>> columns, std::optional<std::vector<int>> row_groups,
    std::optional<nb::bytes> filter, std::optional<nb::bytes> schema) {
  skyhook::ReadParts object(size, Text(design), Text(format));
  AddParts(&object, parts);
  auto filter_buffer = BufferOf(filter);
  auto schema_buffer = BufferOf(schema);
  arrow::Result<skyhook::Decoded> read;
  {
    nb::gil_scoped_release release;
    read = skyhook::DecodeObject(&object, columns, row_groups,
                                 skyhook::BoundFilter(filter_buffer, schema_buffer));
  }
  auto decoded = Checked(std::move(read));
  return {ToBytes(*decoded.object_schema), StreamCapsule(decoded.batches), decoded.rows,
          decoded.bytes, decoded.filtered};
}

std::optional<skyhook::ZonesToRead> PlanRead(uint64_t size, std::optional<nb::bytes> design,
                                             std::optional<nb::bytes> format, nb::list parts,
                                             std::optional<std::vector<std::string>> columns,
                                             std::optional<nb::bytes> filter, nb::bytes schema) {
  skyhook::ReadParts object(size, Text(design), Text(format));
  AddParts(&object, parts);
  auto filter_buffer = BufferOf(filter);
  auto schema_buffer = BufferOf(schema);
  arrow::Result<std::optional<skyhook::ZonesToRead>> plan;
  {
    nb::gil_scoped_release release;
    plan = skyhook::PlanZones(&object, columns, skyhook::BoundFilter(filter_buffer, schema_buffer));
  }
  return Checked(std::move(plan));
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
  m.def(
      "copy_omap", &CopyOmap, nb::arg("source_path"), nb::arg("target_path"),
      "Make the target object's omap a copy of the source's. Failures: ValueError(code, message).");
  m.def("call_in_memory", &CallInMemory, nb::arg("data"), nb::arg("attributes"), nb::arg("method"),
        nb::arg("request"),
        "Run a storage method on an object held in memory; returns (reply, bytes, attributes).");
  m.def("methods", &MethodNames, "Names of the storage-side methods.");
  m.def("encode_object", &EncodeObject, nb::arg("stream"), nb::arg("design"),
        "Encode an Arrow IPC stream as an object of a requested design (its attribute bytes); "
        "returns (object bytes, the design built). Failures: ValueError(code, message).");
  m.def("read_object", &ReadObject, nb::arg("size"), nb::arg("design").none(),
        nb::arg("format").none(), nb::arg("parts"), nb::arg("columns").none(),
        nb::arg("row_groups").none() = nb::none(), nb::arg("filter").none() = nb::none(),
        nb::arg("schema").none() = nb::none(),
        "Decode an object of size bytes from the parts read [(offset, buffer)] and its "
        "attributes; columns: only these (None: all); row_groups: only these zones, "
        "ascending (None: all); filter (a serialized pyarrow expression on the dataset's "
        "schema, an Arrow IPC schema): only the rows it keeps, where it can be evaluated "
        "here. Returns (the object's schema as opened, as an Arrow IPC schema; the columns, "
        "as an Arrow C stream capsule; the rows and buffer bytes decoded; whether the "
        "filter was applied). "
        "Failures: ValueError(code, message).");
  m.def("plan_read", &PlanRead, nb::arg("size"), nb::arg("design").none(), nb::arg("format").none(),
        nb::arg("parts"), nb::arg("columns").none(), nb::arg("filter").none(), nb::arg("schema"),
        "What a plain read of an object reads, from the parts read so far (its footer): "
        "(the row groups that filter, a serialized pyarrow expression on the dataset's "
        "schema, may match by the footer's statistics; the byte ranges [(offset, length)] "
        "of columns in them; whether the statistics prove every row of them matches), or "
        "None when the object's format cannot tell (only Parquet in one extent can). "
        "Failures: ValueError(code, message).");
}
