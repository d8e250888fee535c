// libFuzzer target: mutated objects under fixed valid requests
// (cpp/fuzz/fixed_requests), as a corrupt or hostile partition would meet
// them in an OSD. Input: one selector byte choosing the format attribute and
// the request, then the object's bytes; or, for the design slot, a 4-byte
// little-endian length, that many bytes of skyhook.design attribute, then the
// object's bytes (objects of several column extents).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "harness.h"
#include "memory_object_context.h"

namespace {

struct FixedRequest {
  const skyhook::MethodInfo* method;
  std::shared_ptr<arrow::Buffer> bytes;
};

std::vector<FixedRequest>* fixed_requests;

// Mostly the formats writers use (the two written before designs and rows),
// a design attribute, now and then no attribute or an unknown one.
// Index 0, 1 and 2 are what make_corpus.py's seeds select.
constexpr char kDesign[] = "design";
const std::optional<std::string> kFormats[8] = {"parquet", "ipc",   "rows",       "ipc",
                                                "parquet", kDesign, std::nullopt, "csv"};

// A fixed request's file is named <anything>.<method>.
const skyhook::MethodInfo* MethodOf(const std::string& file_name) {
  const auto* method = skyhook::FindMethod(file_name.substr(file_name.rfind('.') + 1));
  if (method != nullptr) return method;
  std::fprintf(stderr, "skyhook fuzz: %s does not name a method\n", file_name.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fixed_requests = new std::vector<FixedRequest>;
  for (auto& file : skyhook::fuzz::LoadSeedFiles("fixed_requests")) {
    fixed_requests->push_back({MethodOf(file.name), std::move(file.bytes)});
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& format = kFormats[data[0] % std::size(kFormats)];
  const auto& request = (*fixed_requests)[data[0] / std::size(kFormats) % fixed_requests->size()];
  if (format != kDesign) {
    skyhook::MemoryObjectContext context(skyhook::fuzz::AlignedCopy(data + 1, size - 1), format);
    skyhook::fuzz::CallAndCheck(*request.method, &context, request.bytes);
    return 0;
  }
  if (size < 5) return 0;
  const size_t length = std::min<size_t>(
      size - 5, data[1] | (data[2] << 8) | (data[3] << 16) | (size_t{data[4]} << 24));
  std::string design(reinterpret_cast<const char*>(data + 5), length);
  skyhook::MemoryObjectContext context(
      skyhook::fuzz::AlignedCopy(data + 5 + length, size - 5 - length), std::nullopt, design);
  skyhook::fuzz::CallAndCheck(*request.method, &context, request.bytes);
  return 0;
}
