// The values of a field a filter allows, in the field's stored integer domain,
// and the rows they keep: from values decoded per row, or, for a dictionary-
// encoded column chunk, decided once per dictionary value and looked up by
// each row's index (Q6's filter columns hold at most a few thousand distinct
// values in 64 Ki rows).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <arrow/scalar.h>

namespace skyhook {

/// The values of an object's field a filter allows, in the field's integer
/// domain (a decimal's unscaled value, a date's days): nulls never pass.
struct PhysicalRange {
  int field = 0;  // the object's field
  int64_t low = INT64_MIN;
  int64_t high = INT64_MAX;
  std::vector<int64_t> excluded;  // values of `!=` conjuncts
};

/// A valid value of an integer-stored type (ints, date32, timestamps) or a
/// decimal128's unscaled value: the domain ranges are written in.
std::optional<__int128> IntegerDomainValue(const arrow::Scalar& value);

/// Narrows keep[i] to values[i] within `range`, for i < count.
void KeepValues(const int64_t* values, int64_t count, const PhysicalRange& range, uint8_t* keep);

/// Whether `range` keeps each of a dictionary's `length` values, and one more
/// entry (index `length`, the index a null row is given) that it never keeps.
std::vector<uint8_t> KeepTable(const int64_t* dictionary, int64_t length,
                               const PhysicalRange& range);

/// Narrows keep[row] to table[indices[row]]; indices were checked against the
/// table (IndicesBelow, dictionary_indices.h).
void KeepByIndex(const int32_t* indices, int64_t rows, const uint8_t* table, uint8_t* keep);

}  // namespace skyhook
