#include "skyhook/storage/runtime/decimal_kernels.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <arrow/compute/function.h>
#include <arrow/compute/initialize.h>
#include <arrow/compute/kernel.h>
#include <arrow/scalar.h>
#include <arrow/util/bitmap_generate.h>
#include <arrow/util/checked_cast.h>

#include "skyhook/storage/runtime/grouped_decimal_sum.h"
#include "skyhook/storage/runtime/swapped_kernel.h"

namespace skyhook {
namespace {

namespace ac = arrow::compute;
using Int128 = __int128;
using UInt128 = unsigned __int128;

enum class Op {
  kAdd,
  kSubtract,
  kMultiply,
  kEqual,
  kNotEqual,
  kLess,
  kLessEqual,
  kGreater,
  kGreaterEqual
};

struct Replaced {
  const char* name;
  Op op;
};
constexpr Replaced kReplaced[] = {
    {"add", Op::kAdd},           {"add_checked", Op::kAdd},
    {"subtract", Op::kSubtract}, {"subtract_checked", Op::kSubtract},
    {"multiply", Op::kMultiply}, {"multiply_checked", Op::kMultiply},
    {"equal", Op::kEqual},       {"not_equal", Op::kNotEqual},
    {"less", Op::kLess},         {"less_equal", Op::kLessEqual},
    {"greater", Op::kGreater},   {"greater_equal", Op::kGreaterEqual},
};
constexpr int kFunctions = sizeof(kReplaced) / sizeof(kReplaced[0]);

// Arrow's decimal128 kernel of each replaced function, for batches the fast
// path does not cover (an exec is a plain function pointer: no closure).
ac::ArrayKernelExec arrow_exec[kFunctions];

// One operand: an array's values (16 bytes each, little-endian) or a scalar's.
class Operand {
 public:
  explicit Operand(const ac::ExecValue& value) {
    if (value.is_scalar()) {
      const auto& scalar =
          arrow::internal::checked_cast<const arrow::Decimal128Scalar&>(*value.scalar);
      std::memcpy(&scalar_, scalar.value.native_endian_bytes(), sizeof(scalar_));
    } else {
      values_ = value.array.buffers[1].data + value.array.offset * 16;
    }
  }
  Int128 operator[](int64_t i) const {
    if (values_ == nullptr) return scalar_;
    Int128 value;
    std::memcpy(&value, values_ + i * 16, sizeof(value));
    return value;
  }

 private:
  const uint8_t* values_ = nullptr;
  Int128 scalar_ = 0;
};

bool FitsInt64(Int128 value) { return value == static_cast<int64_t>(value); }

template <Op op>
Int128 Arithmetic(int64_t left, int64_t right) {
  // Operands within int64: exact in 128 bits (|product| < 2^126).
  if constexpr (op == Op::kAdd) return Int128{left} + right;
  if constexpr (op == Op::kSubtract) return Int128{left} - right;
  return Int128{left} * right;
}

template <Op op>
bool Compare(Int128 left, Int128 right) {
  if constexpr (op == Op::kEqual) return left == right;
  if constexpr (op == Op::kNotEqual) return left != right;
  if constexpr (op == Op::kLess) return left < right;
  if constexpr (op == Op::kLessEqual) return left <= right;
  if constexpr (op == Op::kGreater) return left > right;
  return left >= right;
}

template <int index>
arrow::Status Exec(ac::KernelContext* context, const ac::ExecSpan& batch, ac::ExecResult* out) {
  constexpr Op op = kReplaced[index].op;
  const Operand left(batch[0]);
  const Operand right(batch[1]);
  arrow::ArraySpan* result = out->array_span_mutable();
  const int64_t length = result->length;
  if constexpr (op == Op::kAdd || op == Op::kSubtract || op == Op::kMultiply) {
    uint8_t* values = result->buffers[1].data + result->offset * 16;
    bool fits = true;
    for (int64_t i = 0; i < length; ++i) {
      const Int128 a = left[i];
      const Int128 b = right[i];
      fits &= FitsInt64(a) & FitsInt64(b);
      const Int128 value = Arithmetic<op>(static_cast<int64_t>(a), static_cast<int64_t>(b));
      std::memcpy(values + i * 16, &value, sizeof(value));
    }
    // A value beyond 64 bits (null slots included): Arrow's kernel, whatever
    // its semantics there, over the whole batch.
    if (!fits) return arrow_exec[index](context, batch, out);
  } else {
    int64_t i = 0;
    arrow::internal::GenerateBitsUnrolled(result->buffers[1].data, result->offset, length, [&] {
      const bool bit = Compare<op>(left[i], right[i]);
      ++i;
      return bit;
    });
  }
  return arrow::Status::OK();
}

template <int... index>
constexpr std::array<ac::ArrayKernelExec, sizeof...(index)> Execs(
    std::integer_sequence<int, index...>) {
  return {&Exec<index>...};
}
constexpr auto kExecs = Execs(std::make_integer_sequence<int, kFunctions>());

// Arrow's kernel takes decimal128 operands only (not decimal256 or integers).
bool TakesDecimal128(const ac::ScalarKernel& kernel) {
  const auto& in_types = kernel.signature->in_types();
  if (in_types.size() != 2 || kernel.signature->is_varargs()) return false;
  for (const auto& in_type : in_types) {
    if (!in_type.Matches(*arrow::decimal128(15, 2)) || in_type.Matches(*arrow::decimal256(15, 2)) ||
        in_type.Matches(*arrow::int64())) {
      return false;
    }
  }
  return true;
}

template <int index>
arrow::Status Replace(ac::FunctionRegistry* registry) {
  ARROW_ASSIGN_OR_RAISE(auto function,
                        ac::GetFunctionRegistry()->GetFunction(kReplaced[index].name));
  if (function->kind() != ac::Function::SCALAR) {
    return arrow::Status::Invalid("Arrow's ", kReplaced[index].name, " is not a scalar function");
  }
  auto scalar = std::static_pointer_cast<ac::ScalarFunction>(function);
  const ac::ScalarKernel* arrow_kernel = nullptr;
  for (const ac::ScalarKernel* kernel : scalar->kernels()) {
    if (TakesDecimal128(*kernel)) {
      if (arrow_kernel != nullptr) {
        return arrow::Status::Invalid("Arrow's ", kReplaced[index].name,
                                      " has two decimal128 kernels");
      }
      arrow_kernel = kernel;
    }
  }
  if (arrow_kernel == nullptr) {
    return arrow::Status::Invalid("Arrow's ", kReplaced[index].name, " has no decimal128 kernel");
  }
  arrow_exec[index] = arrow_kernel->exec;
  ac::ScalarKernel kernel = *arrow_kernel;
  kernel.exec = kExecs[index];
  return registry->AddFunction(std::make_shared<WithSwappedKernel<ac::ScalarFunction>>(
                                   scalar, arrow_kernel, std::move(kernel), scalar->is_pure()),
                               /*allow_overwrite=*/true);
}

template <int... index>
arrow::Status ReplaceAll(ac::FunctionRegistry* registry, std::integer_sequence<int, index...>) {
  arrow::Status status;
  ((status = status.ok() ? Replace<index>(registry) : status), ...);
  return status;
}

arrow::Result<std::unique_ptr<ac::FunctionRegistry>> MakeRegistry() {
  ARROW_RETURN_NOT_OK(ac::Initialize());  // Arrow's functions, before they are looked up
  auto registry = ac::FunctionRegistry::Make(ac::GetFunctionRegistry());
  ARROW_RETURN_NOT_OK(ReplaceAll(registry.get(), std::make_integer_sequence<int, kFunctions>()));
  ARROW_RETURN_NOT_OK(ReplaceGroupedDecimalSum(registry.get()));
  // Casts are dispatched through the registry's own cast function, which a
  // nested registry has only once "cast" is added to it.
  ARROW_ASSIGN_OR_RAISE(auto cast, ac::GetFunctionRegistry()->GetFunction("cast"));
  ARROW_RETURN_NOT_OK(registry->AddFunction(std::move(cast), /*allow_overwrite=*/true));
  return registry;
}

}  // namespace

arrow::Result<ac::FunctionRegistry*> StorageFunctionRegistry() {
  static const auto registry = MakeRegistry();
  if (!registry.ok()) return registry.status();
  return registry->get();
}

}  // namespace skyhook
