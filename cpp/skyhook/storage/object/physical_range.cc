#include "skyhook/storage/object/physical_range.h"

#include <cstddef>

namespace skyhook {

std::optional<__int128> IntegerDomainValue(const arrow::Scalar& value) {
  if (!value.is_valid) return std::nullopt;
  switch (value.type->id()) {
    case arrow::Type::INT8:
      return static_cast<const arrow::Int8Scalar&>(value).value;
    case arrow::Type::INT16:
      return static_cast<const arrow::Int16Scalar&>(value).value;
    case arrow::Type::INT32:
      return static_cast<const arrow::Int32Scalar&>(value).value;
    case arrow::Type::INT64:
      return static_cast<const arrow::Int64Scalar&>(value).value;
    case arrow::Type::DATE32:
      return static_cast<const arrow::Date32Scalar&>(value).value;
    case arrow::Type::TIMESTAMP:
      return static_cast<const arrow::TimestampScalar&>(value).value;
    case arrow::Type::DECIMAL128: {
      const auto& decimal = static_cast<const arrow::Decimal128Scalar&>(value).value;
      return static_cast<__int128>(static_cast<unsigned __int128>(decimal.high_bits()) << 64 |
                                   decimal.low_bits());
    }
    default:
      return std::nullopt;
  }
}

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
