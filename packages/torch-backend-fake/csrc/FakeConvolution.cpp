// Fake's convolution and 2-d pooling kernels (DeviceKernels.h): ATen's CPU
// kernels over the descriptors' memory, on the stream's worker thread, as its
// GEMM is. Each result is computed, then copied into the output core
// allocated (whatever its layout: contiguous or channels-last).
#include <ATen/ops/_adaptive_avg_pool2d.h>
#include <ATen/ops/_adaptive_avg_pool2d_backward.h>
#include <ATen/ops/avg_pool2d.h>
#include <ATen/ops/avg_pool2d_backward.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/max_pool2d_with_indices.h>
#include <ATen/ops/max_pool2d_with_indices_backward.h>

#include <optional>
#include <vector>

#include <torch_backend/DeviceKernels.h>

#include "FakeHardware.h"
#include "HostTensor.h"

namespace {

using fake::host_tensor;
using fake::optional_tensor;
using torch_backend::ConvolutionParams;
using torch_backend::Pool2dParams;
using torch_backend::Status;
using torch_backend::TensorView;

std::vector<int64_t> first(const int64_t* values, int32_t count) {
  return std::vector<int64_t>(values, values + count);
}

// The call's parameters as ATen's argument lists.
struct ConvolutionArguments {
  explicit ConvolutionArguments(const ConvolutionParams& p)
      : stride(first(p.stride, p.spatial_dims)),
        padding(first(p.padding, p.spatial_dims)),
        dilation(first(p.dilation, p.spatial_dims)),
        output_padding(first(p.output_padding, p.spatial_dims)) {}
  std::vector<int64_t> stride, padding, dilation, output_padding;
};

}  // namespace

Status fake_convolution(const torch_backend::KernelContext& ctx,
                        const torch_backend::ConvolutionCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    const ConvolutionArguments args(call.params);
    host_tensor(call.out).copy_(at::convolution(
        host_tensor(call.input), host_tensor(call.weight),
        optional_tensor(call.bias), args.stride, args.padding, args.dilation,
        call.params.transposed, args.output_padding, call.params.groups));
  });
  return torch_backend::kSuccess;
}

Status fake_convolution_backward(
    const torch_backend::KernelContext& ctx,
    const torch_backend::ConvolutionBackwardCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    const ConvolutionArguments args(call.params);
    const bool with_bias = call.grad_bias.data != nullptr;
    const std::vector<int64_t> bias_sizes{call.grad_out.sizes[1]};
    auto [grad_input, grad_weight, grad_bias] = at::convolution_backward(
        host_tensor(call.grad_out), host_tensor(call.input),
        host_tensor(call.weight),
        with_bias ? at::OptionalIntArrayRef(bias_sizes) : std::nullopt,
        args.stride, args.padding, args.dilation, call.params.transposed,
        args.output_padding, call.params.groups,
        {call.grad_input.data != nullptr, call.grad_weight.data != nullptr,
         with_bias});
    if (call.grad_input.data != nullptr) {
      host_tensor(call.grad_input).copy_(grad_input);
    }
    if (call.grad_weight.data != nullptr) {
      host_tensor(call.grad_weight).copy_(grad_weight);
    }
    if (with_bias) {
      host_tensor(call.grad_bias).copy_(grad_bias);
    }
  });
  return torch_backend::kSuccess;
}

namespace {

struct PoolArguments {
  explicit PoolArguments(const Pool2dParams& p)
      : kernel(first(p.kernel, 2)),
        stride(first(p.stride, 2)),
        padding(first(p.padding, 2)),
        dilation(first(p.dilation, 2)),
        divisor(p.divisor_override == 0
                    ? std::nullopt
                    : std::optional<int64_t>(p.divisor_override)) {}
  std::vector<int64_t> kernel, stride, padding, dilation;
  std::optional<int64_t> divisor;
};

Status max_pool(const torch_backend::KernelContext& ctx,
                const torch_backend::PoolCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    const PoolArguments args(call.params);
    auto [out, indices] = at::max_pool2d_with_indices(
        host_tensor(call.input), args.kernel, args.stride, args.padding,
        args.dilation, call.params.ceil_mode);
    host_tensor(call.out).copy_(out);
    host_tensor(call.indices).copy_(indices);
  });
  return torch_backend::kSuccess;
}

Status max_pool_backward(const torch_backend::KernelContext& ctx,
                         const torch_backend::PoolBackwardCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    const PoolArguments args(call.params);
    host_tensor(call.grad_input)
        .copy_(at::max_pool2d_with_indices_backward(
            host_tensor(call.grad_out), host_tensor(call.input), args.kernel,
            args.stride, args.padding, args.dilation, call.params.ceil_mode,
            host_tensor(call.indices)));
  });
  return torch_backend::kSuccess;
}

Status avg_pool(const torch_backend::KernelContext& ctx,
                const torch_backend::PoolCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    const PoolArguments args(call.params);
    host_tensor(call.out).copy_(at::avg_pool2d(
        host_tensor(call.input), args.kernel, args.stride, args.padding,
        call.params.ceil_mode, call.params.count_include_pad, args.divisor));
  });
  return torch_backend::kSuccess;
}

Status avg_pool_backward(const torch_backend::KernelContext& ctx,
                         const torch_backend::PoolBackwardCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    const PoolArguments args(call.params);
    host_tensor(call.grad_input)
        .copy_(at::avg_pool2d_backward(
            host_tensor(call.grad_out), host_tensor(call.input), args.kernel,
            args.stride, args.padding, call.params.ceil_mode,
            call.params.count_include_pad, args.divisor));
  });
  return torch_backend::kSuccess;
}

Status adaptive_avg_pool(const torch_backend::KernelContext& ctx,
                         const torch_backend::PoolCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    host_tensor(call.out).copy_(at::_adaptive_avg_pool2d(
        host_tensor(call.input), {call.out.sizes[2], call.out.sizes[3]}));
  });
  return torch_backend::kSuccess;
}

Status adaptive_avg_pool_backward(const torch_backend::KernelContext& ctx,
                                  const torch_backend::PoolBackwardCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    host_tensor(call.grad_input)
        .copy_(at::_adaptive_avg_pool2d_backward(host_tensor(call.grad_out),
                                                 host_tensor(call.input)));
  });
  return torch_backend::kSuccess;
}

}  // namespace

void register_fake_pooling(torch_backend::KernelRegistry& kernels) {
  kernels.pooling("max_pool2d", &max_pool, &max_pool_backward);
  kernels.pooling("avg_pool2d", &avg_pool, &avg_pool_backward);
  kernels.pooling("adaptive_avg_pool2d", &adaptive_avg_pool,
                  &adaptive_avg_pool_backward);
}
