// Dictionary indices from hostile pages, checked before anything is looked up
// with them: the pre-filter's (physical_prefilter.cc) and the codes of text
// dictionaries (dictionary_codes.cc).
#pragma once

#include <cstdint>

namespace skyhook {

/// Whether every index is below `size`, a dictionary's length: one branchless
/// pass, as indices come from hostile pages.
template <typename Index>
bool IndicesBelow(const Index* indices, int64_t count, int64_t size) {
  const auto bound = static_cast<uint64_t>(size);
  bool inside = true;
  for (int64_t i = 0; i < count; ++i) {
    inside &= static_cast<uint64_t>(static_cast<int64_t>(indices[i])) < bound;
  }
  return inside;
}

}  // namespace skyhook
