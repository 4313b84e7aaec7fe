// ATen's convolution and convolution_backward over the backend's convolution
// kernels (DeviceKernels.h). ATen routes a device it does not know to
// `convolution_overrideable`, which only throws, so core takes the two ops at
// the top. A call the kernel path does not take (a shape the CPU would refuse,
// an empty batch, mixed dtypes, a dtype the kernel declines) runs on the
// fallback, which raises the CPU's own errors.
#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <tuple>
#include <vector>

#include <torch_backend/DeviceKernels.h>

#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"

namespace torch_backend {
namespace {

using at::IntArrayRef;
using at::Tensor;

std::optional<c10::OperatorHandle> forward_op, backward_op;

bool kernel_dtype_floating(const Tensor& tensor) {
  const at::ScalarType type = tensor.scalar_type();
  return type == at::kFloat || type == at::kHalf || type == at::kBFloat16;
}

// `values` for `spatial` dimensions: ATen passes a single value for all of
// them at times (output_padding {0}).
bool expand(IntArrayRef values, int32_t spatial, int64_t* into) {
  if (values.size() == 1) {
    std::fill(into, into + spatial, values[0]);
    return true;
  }
  if (static_cast<int32_t>(values.size()) != spatial) {
    return false;
  }
  std::copy(values.begin(), values.end(), into);
  return true;
}

// The parameters, if the call is one for the kernels: else nullopt (the
// fallback then runs it, and raises where the CPU would).
std::optional<ConvolutionParams> params_for(
    const Tensor& input, const Tensor& weight, IntArrayRef stride,
    IntArrayRef padding, IntArrayRef dilation, bool transposed,
    IntArrayRef output_padding, int64_t groups) {
  const int64_t dims = input.dim();
  if (dims < 3 || dims > 5 || weight.dim() != dims || groups < 1) {
    return std::nullopt;
  }
  ConvolutionParams params;
  params.spatial_dims = static_cast<int32_t>(dims - 2);
  params.transposed = transposed;
  params.groups = groups;
  params.allow_reduced_precision = at::globalContext().allowTF32CuDNN();
  const int32_t spatial = params.spatial_dims;
  if (!expand(stride, spatial, params.stride) ||
      !expand(padding, spatial, params.padding) ||
      !expand(dilation, spatial, params.dilation) ||
      !expand(output_padding, spatial, params.output_padding)) {
    return std::nullopt;
  }
  for (int32_t d = 0; d < spatial; ++d) {
    if (params.stride[d] < 1 || params.padding[d] < 0 ||
        params.dilation[d] < 1 || params.output_padding[d] < 0 ||
        (transposed && params.output_padding[d] >= params.stride[d] &&
         params.output_padding[d] >= params.dilation[d]) ||
        (!transposed && params.output_padding[d] != 0)) {
      return std::nullopt;
    }
  }
  const int64_t in_channels = input.size(1);
  const bool channels_match =
      transposed ? in_channels == weight.size(0) && weight.size(0) % groups == 0
                 : in_channels == weight.size(1) * groups &&
                       weight.size(0) % groups == 0;
  if (!channels_match || input.numel() == 0 || weight.numel() == 0) {
    return std::nullopt;
  }
  return params;
}

// Output sizes (N, C_out, *spatial); empty when a spatial size is not
// positive (the CPU's error then comes from the fallback).
std::vector<int64_t> output_sizes(const Tensor& input, const Tensor& weight,
                                  const ConvolutionParams& p) {
  std::vector<int64_t> sizes{
      input.size(0), p.transposed ? weight.size(1) * p.groups : weight.size(0)};
  for (int32_t d = 0; d < p.spatial_dims; ++d) {
    const int64_t in = input.size(d + 2);
    const int64_t span = p.dilation[d] * (weight.size(d + 2) - 1) + 1;
    const int64_t out = p.transposed
                            ? (in - 1) * p.stride[d] - 2 * p.padding[d] + span +
                                  p.output_padding[d]
                            : (in + 2 * p.padding[d] - span) / p.stride[d] + 1;
    if (out < 1 || (!p.transposed && in + 2 * p.padding[d] < span)) {
      return {};
    }
    sizes.push_back(out);
  }
  return sizes;
}

// Channels-last when the input or the weight is (as cuDNN chooses), for the
// 2-d and 3-d layouts that have it.
at::MemoryFormat layout_for(const Tensor& input, const Tensor& weight) {
  const auto channels_last = input.dim() == 4 ? at::MemoryFormat::ChannelsLast
                             : input.dim() == 5
                                 ? at::MemoryFormat::ChannelsLast3d
                                 : at::MemoryFormat::Contiguous;
  if (channels_last != at::MemoryFormat::Contiguous &&
      (input.suggest_memory_format() == channels_last ||
       weight.suggest_memory_format() == channels_last)) {
    return channels_last;
  }
  return at::MemoryFormat::Contiguous;
}

Tensor convolution(const Tensor& input, const Tensor& weight,
                   const std::optional<Tensor>& bias_opt, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool transposed,
                   IntArrayRef output_padding, int64_t groups) {
  const Tensor bias = bias_opt.value_or(Tensor());
  const auto params = params_for(input, weight, stride, padding, dilation,
                                 transposed, output_padding, groups);
  std::vector<int64_t> sizes;
  if (params && kernel_dtype_floating(input) &&
      weight.scalar_type() == input.scalar_type()) {
    sizes = output_sizes(input, weight, *params);
  }
  // Sizes (N, C_out, ...): the bias must have C_out elements of the dtype.
  if (!sizes.empty() && bias.defined() &&
      (bias.scalar_type() != input.scalar_type() || bias.dim() != 1 ||
       bias.numel() != sizes[1])) {
    sizes.clear();
  }
  if (!sizes.empty()) {
    c10::DeviceGuard guard(input.device());
    const at::MemoryFormat layout = layout_for(input, weight);
    const Tensor x = input.contiguous(layout);
    const Tensor w = weight.contiguous(layout);
    Tensor out = at::empty(sizes, x.options().memory_format(layout));
    ConvolutionCall call;
    call.out = view_of(out);
    call.input = view_of(x);
    call.weight = view_of(w);
    KeptTensors kept;
    call.bias = kept.view_or_absent(bias.defined() ? bias.contiguous() : bias);
    call.params = *params;
    if (kernel_ran(
            convolution_kernel()(kernel_context(input.device()), call))) {
      return out;
    }
  }
  torch::jit::Stack stack{
      input,         weight,         bias_opt,   stride.vec(),
      padding.vec(), dilation.vec(), transposed, output_padding.vec(),
      groups};
  fall_back(*forward_op, stack);
  return stack[0].toTensor();
}

std::tuple<Tensor, Tensor, Tensor> convolution_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& weight,
    at::OptionalIntArrayRef bias_sizes, IntArrayRef stride, IntArrayRef padding,
    IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  const auto params = params_for(input, weight, stride, padding, dilation,
                                 transposed, output_padding, groups);
  const bool takes = params && kernel_dtype_floating(input) &&
                     weight.scalar_type() == input.scalar_type() &&
                     grad_out.scalar_type() == input.scalar_type() &&
                     output_sizes(input, weight, *params) ==
                         std::vector<int64_t>(grad_out.sizes().begin(),
                                              grad_out.sizes().end());
  if (takes) {
    c10::DeviceGuard guard(input.device());
    const at::MemoryFormat layout = layout_for(input, weight);
    const Tensor x = input.contiguous(layout);
    const Tensor w = weight.contiguous(layout);
    Tensor grad_input, grad_weight, grad_bias;
    ConvolutionBackwardCall call;
    if (output_mask[0]) {
      grad_input = at::empty(input.sizes(), x.options().memory_format(layout));
      call.grad_input = view_of(grad_input);
    }
    if (output_mask[1]) {
      grad_weight =
          at::empty(weight.sizes(), w.options().memory_format(layout));
      call.grad_weight = view_of(grad_weight);
    }
    if (output_mask[2]) {
      grad_bias = at::empty({grad_out.size(1)}, x.options());
      call.grad_bias = view_of(grad_bias);
    }
    KeptTensors kept;
    call.grad_out = kept.view(grad_out.contiguous(layout));
    call.input = view_of(x);
    call.weight = view_of(w);
    call.params = *params;
    if (kernel_ran(convolution_backward_kernel()(kernel_context(input.device()),
                                                 call))) {
      return {grad_input, grad_weight, grad_bias};
    }
  }
  torch::jit::Stack stack{
      grad_out,
      input,
      weight,
      bias_sizes ? c10::IValue(bias_sizes->vec()) : c10::IValue(),
      stride.vec(),
      padding.vec(),
      dilation.vec(),
      transposed,
      output_padding.vec(),
      groups,
      c10::List<bool>({output_mask[0], output_mask[1], output_mask[2]})};
  fall_back(*backward_op, stack);
  return {stack[0].toTensor(), stack[1].toTensor(), stack[2].toTensor()};
}

}  // namespace

std::vector<std::string> register_convolution_kernels(torch::Library& aten) {
  if (convolution_kernel() == nullptr) {
    return {};
  }
  forward_op = find_op("convolution");
  backward_op = find_op("convolution_backward");
  register_kernel(aten, "convolution", TORCH_FN(convolution));
  register_kernel(aten, "convolution_backward", TORCH_FN(convolution_backward));
  return {"convolution", "convolution_backward"};
}

}  // namespace torch_backend
