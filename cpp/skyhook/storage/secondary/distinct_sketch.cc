#include "skyhook/storage/secondary/distinct_sketch.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include <arrow/array/array_binary.h>
#include <arrow/type_traits.h>

namespace skyhook {
namespace {

// FNV-1a, then MurmurHash3's finaliser: FNV alone leaves the high bits that
// pick a register poorly mixed for short keys.
uint64_t Hash(std::string_view bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ull;
  hash ^= hash >> 33;
  hash *= 0xff51afd7ed558ccdull;
  hash ^= hash >> 33;
  hash *= 0xc4ceb3fe1a85ec53ull;
  hash ^= hash >> 33;
  return hash;
}

}  // namespace

bool DistinctSketch::Supports(const arrow::DataType& type) {
  return (arrow::is_fixed_width(type.id()) && type.id() != arrow::Type::DICTIONARY &&
          type.id() != arrow::Type::NA && type.id() != arrow::Type::EXTENSION) ||
         arrow::is_base_binary_like(type.id()) || arrow::is_binary_view_like(type.id());
}

arrow::Status DistinctSketch::Update(const arrow::Array& values) {
  const auto& type = *values.type();
  if (!Supports(type)) return arrow::Status::TypeError("no distinct sketch of ", type);
  if (type.id() == arrow::Type::BOOL) {
    const auto& booleans = static_cast<const arrow::BooleanArray&>(values);
    for (int64_t i = 0; i < booleans.length(); ++i) {
      if (booleans.IsValid(i)) AddHash(Hash(booleans.Value(i) ? "1" : "0"));
    }
    return arrow::Status::OK();
  }
  if (arrow::is_fixed_width(type.id())) {
    const int width = type.byte_width();
    const auto* data = values.data()->GetValues<char>(1, 0) + values.offset() * width;
    for (int64_t i = 0; i < values.length(); ++i) {
      if (values.IsValid(i)) AddHash(Hash(std::string_view(data + i * width, width)));
    }
    return arrow::Status::OK();
  }
  switch (type.id()) {
    case arrow::Type::BINARY:
    case arrow::Type::STRING:
      return AddViews(static_cast<const arrow::BinaryArray&>(values));
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::LARGE_STRING:
      return AddViews(static_cast<const arrow::LargeBinaryArray&>(values));
    default:
      return AddViews(static_cast<const arrow::BinaryViewArray&>(values));
  }
}

template <typename Array>
arrow::Status DistinctSketch::AddViews(const Array& values) {
  for (int64_t i = 0; i < values.length(); ++i) {
    if (values.IsValid(i)) AddHash(Hash(values.GetView(i)));
  }
  return arrow::Status::OK();
}

void DistinctSketch::AddHash(uint64_t hash) {
  const size_t index = hash >> (64 - kPrecision);
  const uint64_t rest = (hash << kPrecision) | (uint64_t{1} << (kPrecision - 1));
  const auto rank = static_cast<uint8_t>(std::countl_zero(rest) + 1);
  registers_[index] = std::max(registers_[index], rank);
}

void DistinctSketch::Merge(const DistinctSketch& other) {
  for (size_t i = 0; i < kRegisters; ++i) {
    registers_[i] = std::max(registers_[i], other.registers_[i]);
  }
}

int64_t DistinctSketch::Estimate() const {
  double sum = 0;
  int zeros = 0;
  for (uint8_t r : registers_) {
    sum += std::ldexp(1.0, -r);
    zeros += r == 0;
  }
  const double m = kRegisters;
  const double raw = 0.7213 / (1 + 1.079 / m) * m * m / sum;
  // Linear counting where the raw estimate is biased (small cardinalities).
  if (raw <= 2.5 * m && zeros > 0) return std::llround(m * std::log(m / zeros));
  return std::llround(raw);
}

arrow::Result<DistinctSketch> DistinctSketch::FromRegisters(std::string_view bytes) {
  if (bytes.size() != kRegisters) {
    return arrow::Status::Invalid("a distinct sketch has ", kRegisters, " registers, not ",
                                  bytes.size());
  }
  DistinctSketch sketch;
  std::copy(bytes.begin(), bytes.end(), sketch.registers_.begin());
  return sketch;
}

}  // namespace skyhook
