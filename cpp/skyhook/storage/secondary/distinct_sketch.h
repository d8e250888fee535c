// A HyperLogLog sketch of a column's distinct values: 2^10 one-byte registers
// (about 3 % error), mergeable across zones and objects by a register-wise max.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/array.h>
#include <arrow/result.h>

namespace skyhook {

class DistinctSketch {
 public:
  static constexpr int kPrecision = 10;
  static constexpr size_t kRegisters = size_t{1} << kPrecision;

  DistinctSketch() : registers_(kRegisters, 0) {}

  /// Whether values of this type can be hashed (plain values, not nested).
  static bool Supports(const arrow::DataType& type);
  /// Adds the non-null values of an array of a supported type.
  arrow::Status Update(const arrow::Array& values);
  void Merge(const DistinctSketch& other);
  int64_t Estimate() const;

  /// The registers as bytes, and back (kCorruptObject-worthy Invalid when the size is wrong).
  std::string_view registers() const {
    return {reinterpret_cast<const char*>(registers_.data()), registers_.size()};
  }
  static arrow::Result<DistinctSketch> FromRegisters(std::string_view bytes);

 private:
  template <typename Array>
  arrow::Status AddViews(const Array& values);
  void AddHash(uint64_t hash);

  std::vector<uint8_t> registers_;
};

}  // namespace skyhook
