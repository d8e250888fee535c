// libFuzzer target: mutated requests to every storage method, on fixed seed
// objects (cpp/fuzz/objects). Input: one selector byte choosing the method and
// the object, then the request exactly as a client sends it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness.h"
#include "memory_object_context.h"
#include "request_mutator.h"

namespace {

std::vector<skyhook::fuzz::SeedFile>* seed_objects;

// The methods the selector byte chooses from, in a fixed order (make_corpus.py
// and show_input.py have it too), so regression inputs keep their method as
// methods are added; the transform methods need an object that can be written.
const std::array<const skyhook::MethodInfo*, 3> kFuzzedMethods = {
    skyhook::FindMethod("scan"), skyhook::FindMethod("describe"),
    skyhook::FindMethod("execute_plan")};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  seed_objects = new std::vector(skyhook::fuzz::LoadSeedFiles("objects"));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& method = *kFuzzedMethods[data[0] % kFuzzedMethods.size()];
  const auto& object = (*seed_objects)[data[0] / kFuzzedMethods.size() % seed_objects->size()];
  skyhook::MemoryObjectContext context(object.bytes, skyhook::fuzz::FormatOf(object.name));
  skyhook::fuzz::CallAndCheck(method, &context, skyhook::fuzz::AlignedCopy(data + 1, size - 1));
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned seed) {
  // Now and then another method or object for the same request.
  if (size == 0 || seed % 16 == 0) {
    if (size == 0) size = 1;
    data[0] = static_cast<uint8_t>(seed >> 4);
    return size;
  }
  return 1 + skyhook::fuzz::MutateRequest(data + 1, size - 1, max_size - 1, seed);
}
