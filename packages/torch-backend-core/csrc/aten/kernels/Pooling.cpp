// ATen's 2-d pooling ops over the backend's pooling kernels (DeviceKernels.h):
// max_pool2d_with_indices, avg_pool2d and _adaptive_avg_pool2d with their
// backwards. Shapes and errors come from ATen's own meta functions, as on the
// CPU; a call the kernels do not take (a 3-d input, an empty one, an integral
// dtype, a case a kernel declines) runs on the fallback.
#include <ATen/core/Tensor.h>
#include <ATen/ops/avg_pool2d_backward_meta.h>
#include <ATen/ops/avg_pool2d_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max_pool2d_with_indices_backward_meta.h>
#include <ATen/ops/max_pool2d_with_indices_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <torch_backend/DeviceKernels.h>

#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"
#include "Structured.h"

namespace torch_backend {
namespace {

using at::IntArrayRef;
using at::Tensor;

std::optional<c10::OperatorHandle> max_op, max_backward_op, avg_op,
    avg_backward_op, adaptive_op, adaptive_backward_op;

// 4-d, non-empty, of a floating dtype the kernels take.
bool for_kernels(const Tensor& input) {
  const at::ScalarType type = input.scalar_type();
  return input.dim() == 4 && input.numel() > 0 &&
         (type == at::kFloat || type == at::kHalf || type == at::kBFloat16);
}

// ATen's pair arguments: one value for both dimensions, or two (stride: none
// means the kernel size).
void pair(IntArrayRef values, IntArrayRef otherwise, int64_t* into) {
  const IntArrayRef given = values.empty() ? otherwise : values;
  into[0] = given[0];
  into[1] = given.size() == 1 ? given[0] : given[1];
}

Pool2dParams max_params(IntArrayRef kernel_size, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef dilation,
                        bool ceil_mode) {
  Pool2dParams params;
  pair(kernel_size, kernel_size, params.kernel);
  pair(stride, kernel_size, params.stride);
  pair(padding, padding, params.padding);
  pair(dilation, dilation, params.dilation);
  params.ceil_mode = ceil_mode;
  return params;
}

Pool2dParams avg_params(IntArrayRef kernel_size, IntArrayRef stride,
                        IntArrayRef padding, bool ceil_mode,
                        bool count_include_pad,
                        std::optional<int64_t> divisor_override) {
  Pool2dParams params;
  pair(kernel_size, kernel_size, params.kernel);
  pair(stride, kernel_size, params.stride);
  pair(padding, padding, params.padding);
  params.ceil_mode = ceil_mode;
  params.count_include_pad = count_include_pad;
  params.divisor_override = divisor_override.value_or(0);
  return params;
}

// Kernel `name` writing `out` (and `indices`, max pooling's) from `input`, in
// the input's layout; false where the kernel declined.
bool ran_forward(const char* name, const Tensor& out, const Tensor& input,
                 const Pool2dParams& params, const Tensor* indices = nullptr) {
  PoolCall call;
  KeptTensors kept;
  call.out = view_of(out);
  if (indices != nullptr) {
    call.indices = view_of(*indices);
  }
  call.input = kept.view(input.contiguous(input.suggest_memory_format()));
  call.params = params;
  return kernel_ran(pool_kernel(name)(kernel_context(input.device()), call));
}

// Its backward kernel writing `grad_input` from `grad_out`, the forward's
// input (and its `indices`), in the input's layout; false where it declined.
bool ran_backward(const char* name, const Tensor& grad_input,
                  const Tensor& grad_out, const Tensor& input,
                  const Pool2dParams& params, const Tensor* indices = nullptr) {
  const at::MemoryFormat layout = input.suggest_memory_format();
  PoolBackwardCall call;
  KeptTensors kept;
  call.grad_input = view_of(grad_input);
  call.grad_out = kept.view(grad_out.contiguous(layout));
  call.input = kept.view(input.contiguous(layout));
  if (indices != nullptr) {
    call.indices = kept.view(indices->contiguous(layout));
  }
  call.params = params;
  return kernel_ran(
      pool_backward_kernel(name)(kernel_context(input.device()), call));
}

// ---- max_pool2d
// ---------------------------------------------------------------

std::tuple<Tensor, Tensor> max_pool(const Tensor& input,
                                    IntArrayRef kernel_size, IntArrayRef stride,
                                    IntArrayRef padding, IntArrayRef dilation,
                                    bool ceil_mode) {
  if (for_kernels(input)) {
    // ATen's checks and output shapes (and layout: the input's).
    Functional<at::meta::structured_max_pool2d_with_indices> meta;
    meta.meta(input, kernel_size, stride, padding, dilation, ceil_mode);
    Tensor out = meta.outputs_[0], indices = meta.outputs_[1];
    c10::DeviceGuard guard(input.device());
    const Pool2dParams params =
        max_params(kernel_size, stride, padding, dilation, ceil_mode);
    if (out.numel() == 0 ||
        ran_forward("max_pool2d", out, input, params, &indices)) {
      return {out, indices};
    }
  }
  torch::jit::Stack stack{input,         kernel_size.vec(), stride.vec(),
                          padding.vec(), dilation.vec(),    ceil_mode};
  fall_back(*max_op, stack);
  return {stack[0].toTensor(), stack[1].toTensor()};
}

Tensor max_pool_backward(const Tensor& grad_out, const Tensor& input,
                         IntArrayRef kernel_size, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation,
                         bool ceil_mode, const Tensor& indices) {
  if (for_kernels(input) && grad_out.scalar_type() == input.scalar_type()) {
    Functional<at::meta::structured_max_pool2d_with_indices_backward> meta;
    meta.meta(grad_out, input, kernel_size, stride, padding, dilation,
              ceil_mode, indices);
    Tensor grad_input = meta.outputs_[0];
    c10::DeviceGuard guard(input.device());
    const Pool2dParams params =
        max_params(kernel_size, stride, padding, dilation, ceil_mode);
    if (ran_backward("max_pool2d", grad_input, grad_out, input, params,
                     &indices)) {
      return grad_input;
    }
  }
  torch::jit::Stack stack{grad_out,     input,         kernel_size.vec(),
                          stride.vec(), padding.vec(), dilation.vec(),
                          ceil_mode,    indices};
  fall_back(*max_backward_op, stack);
  return stack[0].toTensor();
}

// ---- avg_pool2d
// ---------------------------------------------------------------

Tensor avg_pool(const Tensor& input, IntArrayRef kernel_size,
                IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                bool count_include_pad,
                std::optional<int64_t> divisor_override) {
  if (for_kernels(input)) {
    Functional<at::meta::structured_avg_pool2d> meta;
    meta.meta(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override);
    Tensor out = meta.outputs_[0];
    c10::DeviceGuard guard(input.device());
    const Pool2dParams params =
        avg_params(kernel_size, stride, padding, ceil_mode, count_include_pad,
                   divisor_override);
    if (out.numel() == 0 || ran_forward("avg_pool2d", out, input, params)) {
      return out;
    }
  }
  torch::jit::Stack stack{input,           kernel_size.vec(), stride.vec(),
                          padding.vec(),   ceil_mode,         count_include_pad,
                          divisor_override};
  fall_back(*avg_op, stack);
  return stack[0].toTensor();
}

Tensor avg_pool_backward(const Tensor& grad_out, const Tensor& input,
                         IntArrayRef kernel_size, IntArrayRef stride,
                         IntArrayRef padding, bool ceil_mode,
                         bool count_include_pad,
                         std::optional<int64_t> divisor_override) {
  if (for_kernels(input) && grad_out.scalar_type() == input.scalar_type()) {
    Functional<at::meta::structured_avg_pool2d_backward> meta;
    meta.meta(grad_out, input, kernel_size, stride, padding, ceil_mode,
              count_include_pad, divisor_override);
    Tensor grad_input = meta.outputs_[0];
    c10::DeviceGuard guard(input.device());
    const Pool2dParams params =
        avg_params(kernel_size, stride, padding, ceil_mode, count_include_pad,
                   divisor_override);
    if (ran_backward("avg_pool2d", grad_input, grad_out, input, params)) {
      return grad_input;
    }
  }
  torch::jit::Stack stack{grad_out,          input,           kernel_size.vec(),
                          stride.vec(),      padding.vec(),   ceil_mode,
                          count_include_pad, divisor_override};
  fall_back(*avg_backward_op, stack);
  return stack[0].toTensor();
}

// ---- adaptive_avg_pool2d
// --------------------------------------------------------

Tensor adaptive_avg_pool(const Tensor& input, IntArrayRef output_size) {
  if (for_kernels(input) && output_size.size() == 2 && output_size[0] > 0 &&
      output_size[1] > 0) {
    c10::DeviceGuard guard(input.device());
    const at::MemoryFormat layout = input.suggest_memory_format();
    Tensor out = at::empty(
        {input.size(0), input.size(1), output_size[0], output_size[1]},
        input.options().memory_format(layout));
    if (ran_forward("adaptive_avg_pool2d", out, input, Pool2dParams{})) {
      return out;
    }
  }
  torch::jit::Stack stack{input, output_size.vec()};
  fall_back(*adaptive_op, stack);
  return stack[0].toTensor();
}

Tensor adaptive_avg_pool_backward(const Tensor& grad_out, const Tensor& input) {
  if (for_kernels(input) && grad_out.dim() == 4 &&
      grad_out.scalar_type() == input.scalar_type() &&
      grad_out.size(0) == input.size(0) && grad_out.size(1) == input.size(1)) {
    c10::DeviceGuard guard(input.device());
    const at::MemoryFormat layout = input.suggest_memory_format();
    Tensor grad_input =
        at::empty(input.sizes(), input.options().memory_format(layout));
    if (ran_backward("adaptive_avg_pool2d", grad_input, grad_out, input,
                     Pool2dParams{})) {
      return grad_input;
    }
  }
  torch::jit::Stack stack{grad_out, input};
  fall_back(*adaptive_backward_op, stack);
  return stack[0].toTensor();
}

}  // namespace

std::vector<std::string> register_pooling_kernels(torch::Library& aten) {
  std::vector<std::string> registered;
  if (pool_kernel("max_pool2d") != nullptr) {
    max_op = find_op("max_pool2d_with_indices");
    max_backward_op = find_op("max_pool2d_with_indices_backward");
    impl_if_listed(aten, registered, "max_pool2d_with_indices",
                   TORCH_FN(max_pool));
    impl_if_listed(aten, registered, "max_pool2d_with_indices_backward",
                   TORCH_FN(max_pool_backward));
  }
  if (pool_kernel("avg_pool2d") != nullptr) {
    avg_op = find_op("avg_pool2d");
    avg_backward_op = find_op("avg_pool2d_backward");
    impl_if_listed(aten, registered, "avg_pool2d", TORCH_FN(avg_pool));
    impl_if_listed(aten, registered, "avg_pool2d_backward",
                   TORCH_FN(avg_pool_backward));
  }
  if (pool_kernel("adaptive_avg_pool2d") != nullptr) {
    adaptive_op = find_op("_adaptive_avg_pool2d");
    adaptive_backward_op = find_op("_adaptive_avg_pool2d_backward");
    impl_if_listed(aten, registered, "_adaptive_avg_pool2d",
                   TORCH_FN(adaptive_avg_pool));
    impl_if_listed(aten, registered, "_adaptive_avg_pool2d_backward",
                   TORCH_FN(adaptive_avg_pool_backward));
  }
  return registered;
}

}  // namespace torch_backend
