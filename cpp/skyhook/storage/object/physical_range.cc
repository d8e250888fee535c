#include "skyhook/storage/object/physical_range.h"

#include <cstddef>

namespace skyhook {

void KeepValues(const int64_t* values, int64_t count, const PhysicalRange& range, uint8_t* keep) {
  const int64_t low = range.low;
  const int64_t high = range.high;
  for (int64_t i = 0; i < count; ++i) {
    keep[i] &= static_cast<uint8_t>((values[i] >= low) & (values[i] <= high));
  }
  for (int64_t excluded : range.excluded) {
    for (int64_t i = 0; i < count; ++i) keep[i] &= values[i] != excluded;
  }
}

std::vector<uint8_t> KeepTable(const int64_t* dictionary, int64_t length,
                               const PhysicalRange& range) {
  std::vector<uint8_t> table(static_cast<size_t>(length) + 1, 1);
  KeepValues(dictionary, length, range, table.data());
  table.back() = 0;
  return table;
}

void KeepByIndex(const int32_t* indices, int64_t rows, const uint8_t* table, uint8_t* keep) {
  for (int64_t row = 0; row < rows; ++row) keep[row] &= table[indices[row]];
}

}  // namespace skyhook
