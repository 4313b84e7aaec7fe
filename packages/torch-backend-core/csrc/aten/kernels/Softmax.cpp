// ATen kernels for softmax and log_softmax, forward and backward, over the
// backend's softmax kernels. The structured meta classes check the dim and
// size the result; the kernel gets the tensors' own strided views and the
// wrapped dim.
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/_log_softmax_backward_data_meta.h>
#include <ATen/ops/_log_softmax_meta.h>
#include <ATen/ops/_softmax_backward_data_meta.h>
#include <ATen/ops/_softmax_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"
#include "Structured.h"

namespace torch_backend {
namespace {

using at::Tensor;

struct SoftmaxOp {
  SoftmaxKernel forward = nullptr;
  SoftmaxBackwardKernel backward = nullptr;
  std::optional<c10::OperatorHandle> functional, out;
};

bool run_forward(const SoftmaxOp& op, const Tensor& out, const Tensor& self,
                 int64_t dim) {
  if (!kernel_dtypes(out, self) || !at::isFloatingType(out.scalar_type())) {
    return false;
  }
  if (out.numel() == 0) {
    return true;
  }
  c10::DeviceGuard guard(out.device());
  const Tensor input = self.to(out.scalar_type());  // half_to_float
  const auto wrapped =
      static_cast<int32_t>(at::maybe_wrap_dim(dim, at_least_1d(self).dim()));
  return kernel_ran(op.forward(kernel_context(out.device()),
                               view_of(at_least_1d(out)),
                               view_of(at_least_1d(input)), wrapped));
}

bool run_backward(const SoftmaxOp& op, const Tensor& grad_input,
                  const Tensor& grad_output, const Tensor& output,
                  int64_t dim) {
  if (!kernel_dtypes(grad_input, grad_output, output) ||
      !at::isFloatingType(grad_input.scalar_type()) ||
      grad_output.scalar_type() != grad_input.scalar_type() ||
      output.scalar_type() != grad_input.scalar_type()) {
    return false;
  }
  if (grad_input.numel() == 0) {
    return true;
  }
  c10::DeviceGuard guard(grad_input.device());
  const auto wrapped =
      static_cast<int32_t>(at::maybe_wrap_dim(dim, at_least_1d(output).dim()));
  return kernel_ran(op.backward(kernel_context(grad_input.device()),
                                view_of(at_least_1d(grad_input)),
                                view_of(at_least_1d(grad_output)),
                                view_of(at_least_1d(output)), wrapped));
}

template <const SoftmaxOp* Op, class Meta>
struct Forward {
  static Tensor functional(const Tensor& self, int64_t dim,
                           bool half_to_float) {
    Functional<Meta> meta;
    meta.meta(self, dim, half_to_float);
    if (run_forward(*Op, meta.outputs_[0], self, dim)) {
      return meta.outputs_[0];
    }
    torch::jit::Stack stack{self, dim, half_to_float};
    fall_back(*Op->functional, stack);
    return stack.back().toTensor();
  }
  static Tensor& out(const Tensor& self, int64_t dim, bool half_to_float,
                     Tensor& out) {
    Out<Meta> meta(out);
    meta.meta(self, dim, half_to_float);
    if (!run_forward(*Op, out, self, dim)) {
      torch::jit::Stack stack{self, dim, half_to_float, out};
      fall_back(*Op->out, stack);
    }
    return out;
  }
};

template <const SoftmaxOp* Op, class Meta>
struct Backward {
  static Tensor functional(const Tensor& grad_output, const Tensor& output,
                           int64_t dim, at::ScalarType input_dtype) {
    Functional<Meta> meta;
    meta.meta(grad_output, output, dim, input_dtype);
    if (run_backward(*Op, meta.outputs_[0], grad_output, output, dim)) {
      return meta.outputs_[0];
    }
    torch::jit::Stack stack{grad_output, output, dim, input_dtype};
    fall_back(*Op->functional, stack);
    return stack.back().toTensor();
  }
  static Tensor& out(const Tensor& grad_output, const Tensor& output,
                     int64_t dim, at::ScalarType input_dtype,
                     Tensor& grad_input) {
    Out<Meta> meta(grad_input);
    meta.meta(grad_output, output, dim, input_dtype);
    if (!run_backward(*Op, grad_input, grad_output, output, dim)) {
      torch::jit::Stack stack{grad_output, output, dim, input_dtype,
                              grad_input};
      fall_back(*Op->out, stack);
    }
    return grad_input;
  }
};

#define TORCH_BACKEND_SOFTMAX_STATE(kernel, Meta, functional, out, BackMeta, \
                                    back_functional, back_out)               \
  SoftmaxOp kernel##_op, kernel##_backward_op;
TORCH_BACKEND_SOFTMAX_OPS(TORCH_BACKEND_SOFTMAX_STATE)
#undef TORCH_BACKEND_SOFTMAX_STATE

}  // namespace

std::vector<std::string> register_softmax_kernels(torch::Library& aten) {
  std::vector<std::string> registered;
#define TORCH_BACKEND_REGISTER_SOFTMAX(kernel, Meta, fn_name, out_name,     \
                                       BackMeta, back_functional, back_out) \
  if (SoftmaxKernel forward = softmax_kernel(#kernel)) {                    \
    SoftmaxBackwardKernel backward = softmax_backward_kernel(#kernel);      \
    kernel##_op = {forward, backward, find_op(fn_name), find_op(out_name)}; \
    kernel##_backward_op = {forward, backward, find_op(back_functional),    \
                            find_op(back_out)};                             \
    using F = Forward<&kernel##_op, Meta>;                                  \
    using B = Backward<&kernel##_backward_op, BackMeta>;                    \
    register_kernel(aten, fn_name, TORCH_FN(F::functional));                \
    register_kernel(aten, out_name, TORCH_FN(F::out));                      \
    register_kernel(aten, back_functional, TORCH_FN(B::functional));        \
    register_kernel(aten, back_out, TORCH_FN(B::out));                      \
    registered.insert(registered.end(),                                     \
                      {fn_name, out_name, back_functional, back_out});      \
  }
  TORCH_BACKEND_SOFTMAX_OPS(TORCH_BACKEND_REGISTER_SOFTMAX)
#undef TORCH_BACKEND_REGISTER_SOFTMAX
  return registered;
}

}  // namespace torch_backend
