// libFuzzer's custom mutator for skyhook requests: most mutations change one
// header field (a Substrait message through MutateProtobuf, an option, a
// missing or extra field) and re-frame the request, so they get past the
// envelope and header checks; the rest flip raw bytes to test those checks.
#pragma once

#include <cstddef>
#include <cstdint>

namespace skyhook::fuzz {

/// request[0..size) is a request as a client sends it; returns the new size.
size_t MutateRequest(uint8_t* request, size_t size, size_t max_size, unsigned seed);

}  // namespace skyhook::fuzz
