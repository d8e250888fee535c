// libFuzzer target: the methods that write (statistics, indexes, transforms)
// with mutated requests, on seed objects (cpp/fuzz/written) whose omap holds
// mutated values, then the object as they left it read back. Input: a
// selector byte choosing the method and the object, a 4-byte little-endian
// request length, the request as a client sends it, then omap entries, each a
// 2-byte key length, the key, a 4-byte value length and the value (a
// truncated entry ends them).
//
// Beyond "no crash, every reply decodable": after a write, describe, a scan of
// every row and the secondary design must still answer with decodable replies,
// and a transform that succeeds keeps the object's rows (a full scan returns
// as many as before; one that names the rows to keep, at most as many).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "adapters/embedded/memory_object.h"
#include "harness.h"
#include "request_mutator.h"
#include "skyhook/protocol/transform_request.h"
#include "skyhook/storage/object/object_design.h"

namespace {

using skyhook::fuzz::CallAndCheck;

// Seed objects: <name>.<ext> with, for designed objects, <name>.<ext>.design beside it.
struct WrittenObject {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::shared_ptr<arrow::Buffer> bytes;
};

std::vector<WrittenObject>* written_objects;
std::shared_ptr<arrow::Buffer>* scan_everything;
std::shared_ptr<arrow::Buffer>* describe_request;

// The order make_corpus.py's WRITING_METHODS has.
const std::array<const skyhook::MethodInfo*, 4> kWritingMethods = {
    skyhook::FindMethod("analyze"), skyhook::FindMethod("create_index"),
    skyhook::FindMethod("drop_index"), skyhook::FindMethod("transform")};

const skyhook::MethodInfo& Method(const char* name) {
  const auto* method = skyhook::FindMethod(name);
  if (method == nullptr) std::abort();
  return *method;
}

std::shared_ptr<arrow::Buffer> FixedRequest(const std::string& name) {
  for (auto& file : skyhook::fuzz::LoadSeedFiles("fixed_requests")) {
    if (file.name == name) return file.bytes;
  }
  std::fprintf(stderr, "skyhook fuzz: no fixed request %s\n", name.c_str());
  std::abort();
}

uint32_t Little(const uint8_t* data, size_t bytes) {
  uint32_t value = 0;
  for (size_t i = 0; i < bytes; ++i) value |= uint32_t{data[i]} << (8 * i);
  return value;
}

struct Input {
  size_t request_offset = 0, request_size = 0;
  std::map<std::string, std::string> omap;
};

Input Parse(const uint8_t* data, size_t size) {
  Input input;
  if (size < 5) return input;
  input.request_offset = 5;
  input.request_size = std::min<size_t>(Little(data + 1, 4), size - 5);
  size_t at = 5 + input.request_size;
  while (at + 2 <= size) {
    const size_t key_size = Little(data + at, 2);
    if (at + 2 + key_size + 4 > size) break;
    std::string key(reinterpret_cast<const char*>(data + at + 2), key_size);
    at += 2 + key_size;
    const size_t value_size = std::min<size_t>(Little(data + at, 4), size - at - 4);
    input.omap[key].assign(reinterpret_cast<const char*>(data + at + 4), value_size);
    at += 4 + value_size;
  }
  return input;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  written_objects = new std::vector<WrittenObject>;
  auto files = skyhook::fuzz::LoadSeedFiles("written");
  for (const auto& file : files) {
    if (file.name.size() > 7 && file.name.compare(file.name.size() - 7, 7, ".design") == 0)
      continue;
    WrittenObject object{file.name, {}, file.bytes};
    for (const auto& other : files) {
      if (other.name == file.name + ".design") {
        object.attributes[skyhook::kDesignAttribute] = other.bytes->ToString();
      }
    }
    if (object.attributes.empty()) {
      object.attributes[skyhook::kFormatAttribute] =
          skyhook::fuzz::FormatOf(file.name).value_or("");
    }
    written_objects->push_back(std::move(object));
  }
  scan_everything = new std::shared_ptr<arrow::Buffer>(FixedRequest("fixed-scan-all.scan"));
  describe_request = new std::shared_ptr<arrow::Buffer>(FixedRequest("fixed-describe.describe"));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& method = *kWritingMethods[data[0] % kWritingMethods.size()];
  const auto& seed = (*written_objects)[data[0] / kWritingMethods.size() % written_objects->size()];
  const Input input = Parse(data, size);
  skyhook::MemoryObject object(seed.bytes, seed.attributes);
  for (const auto& [key, value] : input.omap) {
    if (!object.SetOmap(key, value).ok()) std::abort();
  }
  const bool transform = &method == kWritingMethods[3];
  const skyhook::fuzz::CheckedReply unread{-1, 0};
  const auto before = transform ? CallAndCheck(Method("scan"), &object, *scan_everything) : unread;
  const auto request = skyhook::fuzz::AlignedCopy(data + input.request_offset, input.request_size);
  const auto written = CallAndCheck(method, &object, request);
  const auto after = CallAndCheck(Method("scan"), &object, *scan_everything);
  CallAndCheck(Method("describe"), &object, *describe_request);
  CallAndCheck(Method("secondary_design"), &object, *describe_request);
  const auto decoded = skyhook::TransformRequest::Decode(request);
  const bool filtered = decoded.ok() && decoded->rows.has_value();
  if (transform && written.status == 0 && before.status == 0 &&
      (after.status != 0 || (filtered ? after.rows > before.rows : after.rows != before.rows))) {
    std::fprintf(
        stderr, "skyhook fuzz: a transform that succeeded changed %lld rows to %lld (status %d)\n",
        static_cast<long long>(before.rows), static_cast<long long>(after.rows), after.status);
    std::abort();
  }
  return 0;
}

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned seed) {
  if (size < 5 || seed % 16 == 0) {  // now and then another method or object
    data[0] = static_cast<uint8_t>(seed >> 4);
    return std::max<size_t>(size, 1);
  }
  const Input input = Parse(data, size);
  const size_t tail = size - 5 - input.request_size;
  if (seed % 4 == 0) return LLVMFuzzerMutate(data, size, max_size);  // omap values and framing
  // The request, re-framed: the omap entries after it move with its new size.
  std::vector<uint8_t> rest(data + 5 + input.request_size, data + size);
  const size_t room = max_size - 5 - tail;
  const size_t request_size =
      skyhook::fuzz::MutateRequest(data + 5, input.request_size, room, seed);
  if (!rest.empty()) std::memcpy(data + 5 + request_size, rest.data(), rest.size());
  for (size_t i = 0; i < 4; ++i) data[1 + i] = static_cast<uint8_t>(request_size >> (8 * i));
  return 5 + request_size + tail;
}
