#include "harness.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <arrow/array/array_primitive.h>
#include <arrow/io/file.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>

#include "envelope.h"

namespace skyhook::fuzz {
namespace {

class AlignedBuffer : public arrow::Buffer {
 public:
  AlignedBuffer(const uint8_t* data, size_t size) : arrow::Buffer(Allocate(data, size), size) {}
  ~AlignedBuffer() override { std::free(const_cast<uint8_t*>(data_)); }

 private:
  static const uint8_t* Allocate(const uint8_t* data, size_t size) {
    void* memory = nullptr;
    // posix_memalign, unlike aligned_alloc, takes sizes that are not multiples of 64.
    if (posix_memalign(&memory, 64, std::max<size_t>(size, 1)) != 0) std::abort();
    if (size > 0) std::memcpy(memory, data, size);
    return static_cast<const uint8_t*>(memory);
  }
};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "skyhook fuzz: %s\n", what.c_str());
  std::abort();
}

// The rows of a valid IPC stream.
arrow::Result<int64_t> CheckBody(const std::shared_ptr<arrow::Buffer>& body) {
  auto input = std::make_shared<arrow::io::BufferReader>(body);
  ARROW_ASSIGN_OR_RAISE(auto reader, arrow::ipc::RecordBatchStreamReader::Open(input));
  int64_t rows = 0;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto batch, reader->Next());
    if (batch == nullptr) return rows;
    ARROW_RETURN_NOT_OK(batch->ValidateFull());
    rows += batch->num_rows();
  }
}

CheckedReply Check(const std::shared_ptr<arrow::Buffer>& reply) {
  auto envelope = ParseEnvelope(reply->data(), reply->size());
  if (!envelope.ok()) Fail("undecodable reply: " + envelope.status().ToString());
  if (envelope->magic != "SKRP") Fail("reply without the reply magic");
  const auto status = envelope->header->GetColumnByName("status");
  if (status == nullptr || status->type_id() != arrow::Type::INT32) Fail("reply without a status");
  const int32_t code = std::static_pointer_cast<arrow::Int32Array>(status)->Value(0);
  if (envelope->body->size() == 0) return {code, 0};
  auto rows = CheckBody(AlignedCopy(envelope->body->data(), envelope->body->size()));
  if (!rows.ok()) Fail("reply body is not a valid IPC stream: " + rows.status().ToString());
  return {code, *rows};
}

}  // namespace

std::vector<SeedFile> LoadSeedFiles(const std::string& subdirectory) {
  const char* overridden = std::getenv("SKYHOOK_FUZZ_DATA");
  const std::filesystem::path directory =
      std::filesystem::path(overridden ? overridden : SKYHOOK_FUZZ_DATA) / subdirectory;
  std::vector<SeedFile> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    if (!entry.is_regular_file()) continue;
    auto file = arrow::io::ReadableFile::Open(entry.path().string());
    if (!file.ok()) Fail(file.status().ToString());
    auto bytes = (*file)->Read((*file)->GetSize().ValueOr(0));
    if (!bytes.ok()) Fail(bytes.status().ToString());
    files.push_back(
        {entry.path().filename().string(), AlignedCopy((*bytes)->data(), (*bytes)->size())});
  }
  if (files.empty()) Fail("no seed files in " + directory.string());
  std::sort(files.begin(), files.end(),
            [](const SeedFile& a, const SeedFile& b) { return a.name < b.name; });
  return files;
}

std::optional<std::string> FormatOf(const std::string& file_name) {
  const auto extension = std::filesystem::path(file_name).extension().string();
  if (extension == ".parquet") return "parquet";
  if (extension == ".arrow") return "ipc";
  if (extension == ".rows") return "rows";
  return std::nullopt;
}

std::shared_ptr<arrow::Buffer> AlignedCopy(const uint8_t* data, size_t size) {
  return std::make_shared<AlignedBuffer>(data, size);
}

CheckedReply CallAndCheck(const MethodInfo& method, ObjectContext* object,
                          const std::shared_ptr<arrow::Buffer>& request) {
  return Check(RunMethod(method, object, request));
}

CheckedReply CallAndCheck(const MethodInfo& method, MutableObjectContext* object,
                          const std::shared_ptr<arrow::Buffer>& request) {
  return Check(RunMethod(method, object, request));
}

}  // namespace skyhook::fuzz
