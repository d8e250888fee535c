// Mutations of a protobuf message on the wire, without its schema. Substrait
// plans and expressions are protobufs; flipping their bytes mostly breaks
// varints and lengths and ends in the parser, whereas these mutations keep the
// message well-formed and change what it says: a number (a decimal precision,
// a field index), a repeated field duplicated or dropped (a column named
// twice), one subtree replaced by another (a filter that is not boolean).
#pragma once

#include <random>
#include <string>
#include <string_view>

namespace skyhook::fuzz {

/// A mutated copy of message, at most max_size bytes; message unchanged when
/// it does not parse as protobuf wire format or the result would be too large.
std::string MutateProtobuf(std::string_view message, size_t max_size, std::minstd_rand& random);

}  // namespace skyhook::fuzz
