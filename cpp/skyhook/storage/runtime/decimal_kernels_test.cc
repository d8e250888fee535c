#include "skyhook/storage/runtime/decimal_kernels.h"

#include <random>
#include <string>
#include <vector>

#include <arrow/array/builder_decimal.h>
#include <arrow/array/builder_primitive.h>
#include <arrow/array/util.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

namespace skyhook {
namespace {

namespace ac = arrow::compute;

const char* const kFunctions[] = {"add",      "add_checked",      "subtract", "subtract_checked",
                                  "multiply", "multiply_checked", "equal",    "not_equal",
                                  "less",     "less_equal",       "greater",  "greater_equal"};

// Unscaled values of every size the kernels distinguish: small, around
// int64's and precision 18's bounds, up to precision 38 and beyond it.
arrow::Decimal128 Value(std::mt19937_64& random, int magnitude) {
  const uint64_t low = random();
  const bool negative = random() & 1;
  arrow::Decimal128 value;
  switch (magnitude) {
    case 0:
      value = arrow::Decimal128(static_cast<int64_t>(low % 1000));
      break;
    case 1:  // precision 18's largest values
      value = arrow::Decimal128(static_cast<int64_t>(999'999'999'999'999'999 - low % 3));
      break;
    case 2:  // int64's bounds, on both sides
      value = arrow::Decimal128(0, static_cast<uint64_t>(INT64_MAX) + low % 3 - 1);
      break;
    case 3:
      value = arrow::Decimal128(static_cast<int64_t>(low >> 1));
      break;
    case 4:  // beyond 64 bits
      value = arrow::Decimal128(static_cast<int64_t>(random() % (uint64_t{1} << 62)), low);
      break;
    default:  // the 128-bit extremes (overflowing products and sums)
      value = arrow::Decimal128(INT64_MAX - static_cast<int64_t>(low % 3), low);
  }
  return negative ? -value : value;
}

std::shared_ptr<arrow::Array> Values(std::mt19937_64& random,
                                     const std::shared_ptr<arrow::DataType>& type, int length,
                                     int max_magnitude, bool nulls) {
  arrow::Decimal128Builder builder(type);
  for (int i = 0; i < length; ++i) {
    if (nulls && random() % 5 == 0) {
      EXPECT_TRUE(builder.AppendNull().ok());
    } else {
      EXPECT_TRUE(
          builder.Append(Value(random, static_cast<int>(random() % (max_magnitude + 1)))).ok());
    }
  }
  auto array = builder.Finish().ValueOrDie();
  return array->Slice(1);  // an offset into the buffers
}

// Storage's registry answers as Arrow's own: same type, values, nulls, errors.
void ExpectArrowsAnswer(const std::string& function, const std::vector<arrow::Datum>& args) {
  ac::ExecContext arrows;
  ac::ExecContext storages(arrow::default_memory_pool(), nullptr, *StorageFunctionRegistry());
  auto expected = ac::CallFunction(function, args, &arrows);
  auto actual = ac::CallFunction(function, args, &storages);
  ASSERT_EQ(expected.ok(), actual.ok())
      << function << ": " << expected.status() << " / " << actual.status();
  if (!expected.ok()) return;
  ASSERT_TRUE(actual->type()->Equals(*expected->type())) << function;
  EXPECT_TRUE(actual->Equals(*expected)) << function << "\n"
                                         << args[0].ToString() << "\n"
                                         << args[1].ToString() << "\n"
                                         << expected->make_array()->ToString() << "\n"
                                         << actual->make_array()->ToString();
}

TEST(DecimalKernels, AnswerAsArrowsOwnAcrossScalesPrecisionsNullsAndOverflow) {
  std::mt19937_64 random(13);
  for (int scale = 0; scale <= 18; ++scale) {
    for (int precision : {18, std::max(scale, 1), 19, 38}) {
      if (precision < scale) continue;
      auto left_type = arrow::decimal128(precision, scale);
      auto right_type = arrow::decimal128(std::max(precision / 2, 1), std::min(scale, 1));
      for (int magnitude : {0, 1, 3, 5}) {
        for (bool nulls : {false, true}) {
          auto left = Values(random, left_type, 40, magnitude, nulls);
          auto right = Values(random, right_type, 40, magnitude, nulls);
          auto scalar = Values(random, right_type, 3, magnitude, false)->GetScalar(0).ValueOrDie();
          for (const char* function : kFunctions) {
            ExpectArrowsAnswer(function, {left, right});
            ExpectArrowsAnswer(function, {left, left});
            ExpectArrowsAnswer(function, {left, scalar});
            ExpectArrowsAnswer(function, {scalar, left});
          }
        }
      }
    }
  }
}

TEST(DecimalKernels, KeepArrowsKernelsForOtherTypes) {
  std::mt19937_64 random(14);
  auto decimals = Values(random, arrow::decimal128(15, 2), 20, 2, true);
  auto cast = ac::Cast(decimals, arrow::decimal256(20, 2)).ValueOrDie();
  arrow::Int64Builder integers;
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(integers.Append(i - 10).ok());
  auto whole = integers.Finish().ValueOrDie();
  for (const char* function : kFunctions) {
    ExpectArrowsAnswer(function, {cast, cast});
    ExpectArrowsAnswer(function, {decimals, cast});
    ExpectArrowsAnswer(function, {decimals, whole});
  }
  ExpectArrowsAnswer("divide", {decimals, decimals});
}

TEST(DecimalKernels, EmptyAndAllNull) {
  auto type = arrow::decimal128(15, 2);
  auto empty = arrow::MakeArrayOfNull(type, 0).ValueOrDie();
  auto nulls = arrow::MakeArrayOfNull(type, 17).ValueOrDie();
  for (const char* function : kFunctions) {
    ExpectArrowsAnswer(function, {empty, empty});
    ExpectArrowsAnswer(function, {nulls, nulls});
  }
}

}  // namespace
}  // namespace skyhook
