#pragma once

#include <cmath>
#include <utility>

#include <arrow/api.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/compute/expression.h>

namespace skyhook {

template <typename FloatingArray>
bool AnyNan(const arrow::Array& array) {
  const auto& values = static_cast<const FloatingArray&>(array);
  for (int64_t i = 0; i < values.length(); ++i) {
    if (values.IsValid(i) && std::isnan(values.Value(i))) return true;
  }
  return false;
}

// Whether an array (of any nesting) holds a floating-point NaN.
inline bool HoldsNan(const arrow::Array& array) {
  switch (array.type_id()) {
    case arrow::Type::HALF_FLOAT:
      return true;  // not decoded here: treated as if it held one
    case arrow::Type::FLOAT:
      return AnyNan<arrow::FloatArray>(array);
    case arrow::Type::DOUBLE:
      return AnyNan<arrow::DoubleArray>(array);
    default:
      break;
  }
  const arrow::DataType& type = *array.type();
  if (type.num_fields() == 0 && type.id() != arrow::Type::DICTIONARY) return false;
  // Nested values are not searched: taken as holding one (a rare literal; the
  // filter then merely runs unsimplified).
  return true;
}

// Whether a filter holds a floating-point NaN literal (in an IN list's set too).
inline bool HoldsNanLiteral(const arrow::compute::Expression& expression) {
  if (const arrow::Datum* literal = expression.literal()) {
    if (literal->is_scalar()) {
      const arrow::Scalar& scalar = *literal->scalar();
      if (!scalar.is_valid) return false;
      switch (scalar.type->id()) {
        case arrow::Type::FLOAT:
          return std::isnan(static_cast<const arrow::FloatScalar&>(scalar).value);
        case arrow::Type::DOUBLE:
          return std::isnan(static_cast<const arrow::DoubleScalar&>(scalar).value);
        default:
          break;
      }
      auto array = arrow::MakeArrayFromScalar(scalar, 1);
      return !array.ok() || HoldsNan(**array);
    }
    return literal->is_array() ? HoldsNan(*literal->make_array()) : true;
  }
  const auto* call = expression.call();
  if (call == nullptr) return false;
  if (const auto* set =
          dynamic_cast<const arrow::compute::SetLookupOptions*>(call->options.get())) {
    if (set->value_set.is_array() && HoldsNan(*set->value_set.make_array())) return true;
    if (set->value_set.is_chunked_array()) {
      for (const auto& chunk : set->value_set.chunked_array()->chunks()) {
        if (HoldsNan(*chunk)) return true;
      }
    }
  }
  for (const auto& argument : call->arguments) {
    if (HoldsNanLiteral(argument)) return true;
  }
  return false;
}

// Arrow's SimplifyWithGuarantee, except for a filter with a NaN literal, which
// is returned as it is: Arrow orders NaN above every number, so against a
// guarantee bounding x it takes `x < NaN` as true (it is false for every x) and
// `not (x < NaN)` as false, and would rule out objects and zones whose rows match.
inline arrow::Result<arrow::compute::Expression> NanSafeSimplify(
    arrow::compute::Expression filter, const arrow::compute::Expression& guarantee) {
  if (HoldsNanLiteral(filter)) return filter;
  return arrow::compute::SimplifyWithGuarantee(std::move(filter), guarantee);
}

}  // namespace skyhook
