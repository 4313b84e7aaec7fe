// npu's convolution and pooling kernels on aclnn (aclnnConvolution and its
// backward, aclnnMaxPool2dWithIndices, aclnnAvgPool2d,
// aclnnAdaptiveAvgPool2d and their backwards): contiguous NCHW cases; others
// are declined to core's fallback.
#include <aclnnop/aclnn_adaptive_avg_pool2d.h>
#include <aclnnop/aclnn_adaptive_avg_pool2d_backward.h>
#include <aclnnop/aclnn_avg_pool2d.h>
#include <aclnnop/aclnn_avg_pool2d_backward.h>
#include <aclnnop/aclnn_convolution.h>
#include <aclnnop/aclnn_convolution_backward.h>
#include <aclnnop/aclnn_max_pool2d_with_indices.h>
#include <aclnnop/aclnn_max_pool2d_with_indices_backward.h>

#include "Aclnn.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace {

using namespace npu;  // Aclnn.h: the descriptors, ACLNN, core's kernel types

// ---- convolution ------------------------------------------------------------

// The first `count` entries of one of the parameter arrays.
IntArray first(const std::int64_t* values, std::int32_t count) {
  return IntArray(std::vector<std::int64_t>(values, values + count));
}

bool contiguous(const TensorView& view) {
  std::int64_t expected = 1;
  for (std::int32_t d = view.dim - 1; d >= 0; --d) {
    if (view.sizes[d] != 1 && view.strides[d] != expected) {
      return false;
    }
    expected *= view.sizes[d];
  }
  return true;
}

// aclnn writes NCHW outputs only (its inputs may be strided): channels-last
// outputs are left to the fallback.
bool contiguous_outputs(std::initializer_list<const TensorView*> outputs) {
  for (const TensorView* view : outputs) {
    if (view->data != nullptr && !contiguous(*view)) {
      return false;
    }
  }
  return true;
}

Status convolution(const KernelContext& ctx,
                   const torch_backend::ConvolutionCall& call) {
  if (!contiguous_outputs({&call.out})) {
    return torch_backend::kNotSupported;
  }
  const auto& p = call.params;
  return ACLNN(ctx, aclnnConvolution, Tensor(call.input), Tensor(call.weight),
               OptionalTensor(call.bias), first(p.stride, p.spatial_dims),
               first(p.padding, p.spatial_dims),
               first(p.dilation, p.spatial_dims), p.transposed,
               first(p.output_padding, p.spatial_dims), p.groups,
               Tensor(call.out), kKeepDtype);
}

Status convolution_backward(
    const KernelContext& ctx,
    const torch_backend::ConvolutionBackwardCall& call) {
  if (!contiguous_outputs(
          {&call.grad_input, &call.grad_weight, &call.grad_bias})) {
    return torch_backend::kNotSupported;
  }
  const auto& p = call.params;
  const IntArray bias_sizes({call.grad_out.sizes[1]});
  return ACLNN(
      ctx, aclnnConvolutionBackward, Tensor(call.grad_out), Tensor(call.input),
      Tensor(call.weight), bias_sizes, first(p.stride, p.spatial_dims),
      first(p.padding, p.spatial_dims), first(p.dilation, p.spatial_dims),
      p.transposed, first(p.output_padding, p.spatial_dims),
      static_cast<int>(p.groups),
      OutputMask(call.grad_input, call.grad_weight, call.grad_bias), kKeepDtype,
      OptionalTensor(call.grad_input), OptionalTensor(call.grad_weight),
      OptionalTensor(call.grad_bias));
}

// ---- pooling
// ------------------------------------------------------------------

Status max_pool(const KernelContext& ctx, const torch_backend::PoolCall& call) {
  if (!contiguous_outputs({&call.out, &call.indices})) {
    return torch_backend::kNotSupported;
  }
  const auto& p = call.params;
  return ACLNN(ctx, aclnnMaxPool2dWithIndices, Tensor(call.input),
               first(p.kernel, 2), first(p.stride, 2), first(p.padding, 2),
               first(p.dilation, 2), p.ceil_mode, Tensor(call.out),
               Tensor(call.indices));
}

Status max_pool_backward(const KernelContext& ctx,
                         const torch_backend::PoolBackwardCall& call) {
  if (!contiguous_outputs({&call.grad_input})) {
    return torch_backend::kNotSupported;
  }
  const auto& p = call.params;
  return ACLNN(ctx, aclnnMaxPool2dWithIndicesBackward, Tensor(call.grad_out),
               Tensor(call.input), Tensor(call.indices), first(p.kernel, 2),
               first(p.stride, 2), first(p.padding, 2), first(p.dilation, 2),
               p.ceil_mode, Tensor(call.grad_input));
}

Status avg_pool(const KernelContext& ctx, const torch_backend::PoolCall& call) {
  if (!contiguous_outputs({&call.out})) {
    return torch_backend::kNotSupported;
  }
  const auto& p = call.params;
  return ACLNN(ctx, aclnnAvgPool2d, Tensor(call.input), first(p.kernel, 2),
               first(p.stride, 2), first(p.padding, 2), p.ceil_mode,
               p.count_include_pad, p.divisor_override, kKeepDtype,
               Tensor(call.out));
}

Status avg_pool_backward(const KernelContext& ctx,
                         const torch_backend::PoolBackwardCall& call) {
  if (!contiguous_outputs({&call.grad_input})) {
    return torch_backend::kNotSupported;
  }
  const auto& p = call.params;
  return ACLNN(ctx, aclnnAvgPool2dBackward, Tensor(call.grad_out),
               Tensor(call.input), first(p.kernel, 2), first(p.stride, 2),
               first(p.padding, 2), p.ceil_mode, p.count_include_pad,
               p.divisor_override, kKeepDtype, Tensor(call.grad_input));
}

Status adaptive_avg_pool(const KernelContext& ctx,
                         const torch_backend::PoolCall& call) {
  if (!contiguous_outputs({&call.out})) {
    return torch_backend::kNotSupported;
  }
  const IntArray output_size({call.out.sizes[2], call.out.sizes[3]});
  return ACLNN(ctx, aclnnAdaptiveAvgPool2d, Tensor(call.input), output_size,
               Tensor(call.out));
}

Status adaptive_avg_pool_backward(const KernelContext& ctx,
                                  const torch_backend::PoolBackwardCall& call) {
  if (!contiguous_outputs({&call.grad_input})) {
    return torch_backend::kNotSupported;
  }
  return ACLNN(ctx, aclnnAdaptiveAvgPool2dBackward, Tensor(call.grad_out),
               Tensor(call.input), Tensor(call.grad_input));
}

}  // namespace

void register_npu_convolution_and_pooling(
    torch_backend::KernelRegistry& kernels) {
  kernels.convolution(&convolution, &convolution_backward);
  kernels.pooling("max_pool2d", &max_pool, &max_pool_backward);
  kernels.pooling("avg_pool2d", &avg_pool, &avg_pool_backward);
  kernels.pooling("adaptive_avg_pool2d", &adaptive_avg_pool,
                  &adaptive_avg_pool_backward);
}
