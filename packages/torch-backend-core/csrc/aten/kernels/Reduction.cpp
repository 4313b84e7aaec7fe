// ATen kernels for reductions (sum, mean, amax, amin over any set of dims),
// over the backend's reduction kernels. The op's structured meta class sizes
// the result and checks the arguments; ATen's make_reduction_from_out_ty
// builds the reduction TensorIterator the CPU kernel uses, whose output has
// stride 0 along the reduced dims and whose input is cast to the result
// dtype.
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/ops/amax_meta.h>
#include <ATen/ops/amin_meta.h>
#include <ATen/ops/mean_meta.h>
#include <ATen/ops/sum_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <limits>

#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"
#include "Structured.h"

namespace torch_backend {
namespace {

using at::Tensor;

struct ReductionOp {
  ReductionKernel kernel = nullptr;
  std::optional<c10::OperatorHandle> functional, out;
  double empty_value = 0;  // the result of reducing nothing (sum: 0)
};

// Reduces `self` into the sized `result` over `dims`; false: declined.
bool run_reduction(const ReductionOp& op, const Tensor& self,
                   const Tensor& result, at::OptionalIntArrayRef dims,
                   bool keepdim) {
  if (!kernel_dtypes(self, result)) {
    return false;
  }
  c10::DeviceGuard guard(result.device());
  if (self.numel() == 0) {
    result.fill_(op.empty_value);
    return true;
  }
  auto iter = at::meta::make_reduction_from_out_ty(self, result, dims, keepdim,
                                                   result.scalar_type());
  if (iter.numel() == 0) {
    return true;
  }
  return kernel_ran(op.kernel(kernel_context(result.device()), view_of(iter, 0),
                              view_of(iter, 1)));
}

template <class Meta, class Signature>
struct Wrappers;

// sum/mean take (self, dim?, keepdim, dtype?), amax/amin (self, dim, keepdim).
template <class Meta, class Dims, class... Rest>
struct Wrappers<Meta, void (Meta::*)(const Tensor&, Dims, bool, Rest...)> {
  template <const ReductionOp* Op>
  static Tensor functional(const Tensor& self, Dims dims, bool keepdim,
                           Rest... rest) {
    Functional<Meta> meta;
    meta.meta(self, dims, keepdim, rest...);
    const Tensor& result = meta.outputs_[0];
    if (!run_reduction(*Op, self, result, dims, keepdim)) {
      torch::jit::Stack stack{self, boxed(dims), keepdim, boxed(rest)...};
      fall_back(*Op->functional, stack);
      return stack.back().toTensor();
    }
    return result;
  }

  template <const ReductionOp* Op>
  static Tensor& out(const Tensor& self, Dims dims, bool keepdim, Rest... rest,
                     Tensor& out) {
    Out<Meta> meta(out);
    meta.meta(self, dims, keepdim, rest...);
    if (!run_reduction(*Op, self, out, dims, keepdim)) {
      torch::jit::Stack stack{self, boxed(dims), keepdim, boxed(rest)..., out};
      fall_back(*Op->out, stack);
    }
    return out;
  }
};

#define TORCH_BACKEND_REDUCTION_STATE(id, Meta, functional, out, empty) \
  ReductionOp id##_op;
TORCH_BACKEND_REDUCTION_OPS(TORCH_BACKEND_REDUCTION_STATE)
#undef TORCH_BACKEND_REDUCTION_STATE

}  // namespace

std::vector<std::string> register_reduction_kernels(torch::Library& aten) {
  std::vector<std::string> registered;
#define TORCH_BACKEND_REGISTER_REDUCTION(id, Meta, fn_name, out_name, empty) \
  if (ReductionKernel kernel = reduction_kernel(#id)) {                      \
    using Impl = Wrappers<Meta, decltype(&Meta::meta)>;                      \
    id##_op = {kernel, find_op(fn_name), find_op(out_name), empty};          \
    aten.impl(fn_name, TORCH_FN(Impl::template functional<&id##_op>));       \
    aten.impl(out_name, TORCH_FN(Impl::template out<&id##_op>));             \
    registered.insert(registered.end(), {fn_name, out_name});                \
  }
  TORCH_BACKEND_REDUCTION_OPS(TORCH_BACKEND_REGISTER_REDUCTION)
#undef TORCH_BACKEND_REGISTER_REDUCTION
  return registered;
}

}  // namespace torch_backend
