// Arrow's compute function with one of its kernels swapped for storage's own:
// dispatch (exact and best, with Arrow's implicit casts) is Arrow's, and the
// kernel it picks is replaced only when it is the one swapped.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include <arrow/compute/function.h>
#include <arrow/compute/kernel.h>

namespace skyhook {

template <typename Function>
class WithSwappedKernel : public Function {
 public:
  using Kernel = typename Function::KernelType;

  /// base_arguments: the rest of Function's constructor (a scalar function's purity).
  template <typename... BaseArguments>
  WithSwappedKernel(std::shared_ptr<Function> arrow_function, const Kernel* arrow_kernel,
                    Kernel kernel, BaseArguments&&... base_arguments)
      : Function(arrow_function->name(), arrow_function->arity(), arrow_function->doc(),
                 arrow_function->default_options(), std::forward<BaseArguments>(base_arguments)...),
        arrow_function_(std::move(arrow_function)),
        arrow_kernel_(arrow_kernel),
        kernel_(std::move(kernel)) {}

  arrow::Result<const arrow::compute::Kernel*> DispatchExact(
      const std::vector<arrow::TypeHolder>& types) const override {
    ARROW_ASSIGN_OR_RAISE(const arrow::compute::Kernel* kernel,
                          arrow_function_->DispatchExact(types));
    return Swapped(kernel);
  }
  arrow::Result<const arrow::compute::Kernel*> DispatchBest(
      std::vector<arrow::TypeHolder>* types) const override {
    ARROW_ASSIGN_OR_RAISE(const arrow::compute::Kernel* kernel,
                          arrow_function_->DispatchBest(types));
    return Swapped(kernel);
  }

 private:
  const arrow::compute::Kernel* Swapped(const arrow::compute::Kernel* kernel) const {
    return kernel == arrow_kernel_ ? &kernel_ : kernel;
  }

  std::shared_ptr<Function> arrow_function_;
  const Kernel* arrow_kernel_;
  Kernel kernel_;
};

}  // namespace skyhook
