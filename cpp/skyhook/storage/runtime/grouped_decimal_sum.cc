#include "skyhook/storage/runtime/grouped_decimal_sum.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include <arrow/buffer_builder.h>
#include <arrow/compute/api_aggregate.h>
#include <arrow/compute/function.h>
#include <arrow/compute/kernel.h>
#include <arrow/scalar.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/checked_cast.h>

#include "skyhook/storage/runtime/swapped_kernel.h"

namespace skyhook {
namespace {

namespace ac = arrow::compute;
// Unsigned: additions wrap modulo 2^128 as Arrow's Decimal128 additions do.
using UInt128 = unsigned __int128;

// Per group, in the call's pool (its memory limit counts the groups).
struct GroupedSum : public ac::KernelState {
  explicit GroupedSum(arrow::MemoryPool* pool) : sums(pool), counts(pool), no_nulls(pool) {}
  std::shared_ptr<arrow::DataType> out_type;
  ac::ScalarAggregateOptions options;
  arrow::TypedBufferBuilder<UInt128> sums;
  arrow::TypedBufferBuilder<int64_t> counts;
  arrow::TypedBufferBuilder<uint8_t> no_nulls;  // per group: no null value seen
};

GroupedSum* StateOf(ac::KernelContext* context) {
  return arrow::internal::checked_cast<GroupedSum*>(context->state());
}

// Arrow's: the input's scale at decimal128's largest precision.
arrow::Result<arrow::TypeHolder> OutType(ac::KernelContext*,
                                         const std::vector<arrow::TypeHolder>& inputs) {
  const auto& decimal = arrow::internal::checked_cast<const arrow::DecimalType&>(*inputs[0].type);
  return arrow::decimal128(arrow::Decimal128Type::kMaxPrecision, decimal.scale());
}

arrow::Result<std::unique_ptr<ac::KernelState>> Init(ac::KernelContext* context,
                                                     const ac::KernelInitArgs& args) {
  auto state = std::make_unique<GroupedSum>(context->memory_pool());
  ARROW_ASSIGN_OR_RAISE(auto out_type, OutType(context, args.inputs));
  state->out_type = out_type.GetSharedPtr();
  if (args.options != nullptr) {
    state->options =
        arrow::internal::checked_cast<const ac::ScalarAggregateOptions&>(*args.options);
  }
  return state;
}

arrow::Status Resize(ac::KernelContext* context, int64_t groups) {
  auto* state = StateOf(context);
  const int64_t added = groups - state->sums.length();
  if (added <= 0) return arrow::Status::OK();
  ARROW_RETURN_NOT_OK(state->sums.Append(added, 0));
  ARROW_RETURN_NOT_OK(state->counts.Append(added, 0));
  return state->no_nulls.Append(added, 1);
}

arrow::Status Consume(ac::KernelContext* context, const ac::ExecSpan& batch) {
  auto* state = StateOf(context);
  const uint32_t* groups = batch[1].array.GetValues<uint32_t>(1);
  const int64_t length = batch.length;
  UInt128* sums = state->sums.mutable_data();
  int64_t* counts = state->counts.mutable_data();
  uint8_t* no_nulls = state->no_nulls.mutable_data();
  if (batch[0].is_scalar()) {
    const auto& scalar =
        arrow::internal::checked_cast<const arrow::Decimal128Scalar&>(*batch[0].scalar);
    UInt128 value;
    std::memcpy(&value, scalar.value.native_endian_bytes(), sizeof(value));
    for (int64_t row = 0; row < length; ++row) {
      if (scalar.is_valid) {
        sums[groups[row]] += value;
        ++counts[groups[row]];
      } else {
        no_nulls[groups[row]] = 0;
      }
    }
    return arrow::Status::OK();
  }
  const arrow::ArraySpan& values = batch[0].array;
  const uint8_t* data = values.buffers[1].data + values.offset * 16;
  const uint8_t* validity = values.MayHaveNulls() ? values.buffers[0].data : nullptr;
  for (int64_t row = 0; row < length; ++row) {
    const uint32_t group = groups[row];
    if (validity != nullptr && !arrow::bit_util::GetBit(validity, values.offset + row)) {
      no_nulls[group] = 0;
      continue;
    }
    UInt128 value;
    std::memcpy(&value, data + row * 16, sizeof(value));
    sums[group] += value;
    ++counts[group];
  }
  return arrow::Status::OK();
}

arrow::Status Merge(ac::KernelContext* context, ac::KernelState&& other_state,
                    const arrow::ArrayData& group_id_mapping) {
  auto* state = StateOf(context);
  auto& other = arrow::internal::checked_cast<GroupedSum&>(other_state);
  const uint32_t* mapping = group_id_mapping.GetValues<uint32_t>(1);
  for (int64_t group = 0; group < group_id_mapping.length; ++group) {
    const uint32_t into = mapping[group];
    state->sums.mutable_data()[into] += other.sums.data()[group];
    state->counts.mutable_data()[into] += other.counts.data()[group];
    state->no_nulls.mutable_data()[into] &= other.no_nulls.data()[group];
  }
  return arrow::Status::OK();
}

arrow::Status Finalize(ac::KernelContext* context, arrow::Datum* out) {
  auto* state = StateOf(context);
  const int64_t groups = state->sums.length();
  ARROW_ASSIGN_OR_RAISE(auto bitmap, arrow::AllocateBitmap(groups, context->memory_pool()));
  int64_t null_count = 0;
  for (int64_t group = 0; group < groups; ++group) {
    const bool valid = state->counts.data()[group] >= state->options.min_count &&
                       (state->options.skip_nulls || state->no_nulls.data()[group] != 0);
    arrow::bit_util::SetBitTo(bitmap->mutable_data(), group, valid);
    null_count += !valid;
  }
  // Unsigned 128-bit sums are decimal128's little-endian values as they are.
  std::shared_ptr<arrow::Buffer> values;
  ARROW_RETURN_NOT_OK(state->sums.Finish(&values));
  *out = arrow::ArrayData::Make(state->out_type, groups,
                                {null_count > 0 ? std::move(bitmap) : nullptr, std::move(values)},
                                null_count);
  return arrow::Status::OK();
}

}  // namespace

arrow::Status ReplaceGroupedDecimalSum(ac::FunctionRegistry* registry) {
  ARROW_ASSIGN_OR_RAISE(auto function, ac::GetFunctionRegistry()->GetFunction("hash_sum"));
  if (function->kind() != ac::Function::HASH_AGGREGATE) {
    return arrow::Status::Invalid("Arrow's hash_sum is not a hash aggregate function");
  }
  auto hash_sum = std::static_pointer_cast<ac::HashAggregateFunction>(function);
  const ac::HashAggregateKernel* arrow_kernel = nullptr;
  for (const ac::HashAggregateKernel* kernel : hash_sum->kernels()) {
    const auto& in_types = kernel->signature->in_types();
    if (in_types.size() == 2 && in_types[0].Matches(*arrow::decimal128(15, 2)) &&
        !in_types[0].Matches(*arrow::decimal256(15, 2)) && in_types[1].Matches(*arrow::uint32())) {
      if (arrow_kernel != nullptr) {
        return arrow::Status::Invalid("Arrow's hash_sum has two decimal128 kernels");
      }
      arrow_kernel = kernel;
    }
  }
  if (arrow_kernel == nullptr) {
    return arrow::Status::Invalid("Arrow's hash_sum has no decimal128 kernel");
  }
  ac::HashAggregateKernel kernel = *arrow_kernel;
  // Arrow's output type asks Arrow's kernel state for it.
  kernel.signature =
      ac::KernelSignature::Make(arrow_kernel->signature->in_types(), ac::OutputType(OutType));
  kernel.init = Init;
  kernel.resize = Resize;
  kernel.consume = Consume;
  kernel.merge = Merge;
  kernel.finalize = Finalize;
  return registry->AddFunction(std::make_shared<WithSwappedKernel<ac::HashAggregateFunction>>(
                                   hash_sum, arrow_kernel, std::move(kernel)),
                               /*allow_overwrite=*/true);
}

}  // namespace skyhook
