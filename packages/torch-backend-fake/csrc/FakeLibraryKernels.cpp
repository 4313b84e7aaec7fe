// fake's kernels through ATen's CPU kernels, its "vendor library" (as cuBLAS
// or aclnn are a real device's): reductions, GEMM, softmax, nll_loss,
// indexing, normalisation, on CPU tensors over the descriptors' memory
// (HostTensor.h), enqueued on the stream core hands them; and dropout's
// Philox generator.
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <utility>

#include <ATen/ops/_log_softmax.h>
#include <ATen/ops/_log_softmax_backward_data.h>
#include <ATen/ops/_softmax.h>
#include <ATen/ops/_softmax_backward_data.h>
#include <ATen/ops/add.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/baddbmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/index_add.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/max.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/min.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/native_batch_norm.h>
#include <ATen/ops/native_batch_norm_backward.h>
#include <ATen/ops/native_layer_norm.h>
#include <ATen/ops/native_layer_norm_backward.h>
#include <ATen/ops/nll_loss_backward.h>
#include <ATen/ops/nll_loss_forward.h>
#include <ATen/ops/scatter_add.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/var_mean.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <torch_backend/DeviceKernels.h>

#include "FakeDTypes.h"
#include "FakeHardware.h"
#include "HostTensor.h"

namespace {

using fake::Compute;
using fake::host_tensor;
using fake::optional_tensor;
using fake::visit_dtype;
using torch_backend::KernelContext;
using torch_backend::kNotSupported;
using torch_backend::kSuccess;
using torch_backend::Status;
using torch_backend::TensorView;

// Reductions: the dims where out has stride 0 are the reduced ones; out is
// viewed with size 1 there (keepdim).
template <typename Reduce>
Status reduce(const KernelContext& ctx, const TensorView& out,
              const TensorView& in, Reduce reduce_into) {
  fake::enqueue_kernel(ctx.stream, [out, in, reduce_into] {
    std::vector<std::int64_t> dims;
    TensorView kept = out;
    for (std::int32_t d = 0; d < out.dim; ++d) {
      if (out.strides[d] == 0 && out.sizes[d] > 1) {
        dims.push_back(d);
        kept.sizes[d] = 1;
      }
    }
    at::Tensor result = host_tensor(kept);
    if (dims.empty()) {
      result.copy_(host_tensor(in));  // nothing folds: each output is one input
    } else {
      reduce_into(result, host_tensor(in), at::IntArrayRef(dims));
    }
  });
  return kSuccess;
}

#define FAKE_REDUCTION(name, call)                                \
  Status name(const KernelContext& ctx, const TensorView& out,    \
              const TensorView& in) {                             \
    return reduce(ctx, out, in,                                   \
                  [](at::Tensor& result, const at::Tensor& input, \
                     at::IntArrayRef dims) { call; });            \
  }
FAKE_REDUCTION(sum_kernel, at::sum_out(result, input, dims, true))
FAKE_REDUCTION(mean_kernel, at::mean_out(result, input, dims, true))
FAKE_REDUCTION(amax_kernel, at::amax_out(result, input, dims, true))
FAKE_REDUCTION(amin_kernel, at::amin_out(result, input, dims, true))
#undef FAKE_REDUCTION

// var/std (and the mean) over the dims where var has stride 0.
Status variance_kernel(const KernelContext& ctx,
                       const torch_backend::VarianceCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    std::vector<std::int64_t> dims;
    TensorView var = call.var;
    TensorView mean = call.mean;
    for (std::int32_t d = 0; d < var.dim; ++d) {
      if (var.strides[d] == 0 && var.sizes[d] > 1) {
        dims.push_back(d);
        var.sizes[d] = 1;
        mean.sizes[d] = 1;
      }
    }
    const at::Tensor in = host_tensor(call.in);
    // An empty dim list would reduce everything: nothing folds here.
    auto [result, average] =
        dims.empty()
            ? std::make_tuple(at::zeros_like(in), in.clone())
            : at::var_mean(in, at::IntArrayRef(dims),
                           std::optional<at::Scalar>(call.correction), true);
    if (call.standard_deviation) {
      result.sqrt_();
    }
    host_tensor(var).copy_(result);
    if (call.mean.data != nullptr) {
      host_tensor(mean).copy_(average);
    }
  });
  return kSuccess;
}

// A batch of one matrix's view as the matrix (no op call to index it).
torch_backend::TensorView first_matrix(torch_backend::TensorView view) {
  view.dim = 2;
  view.sizes[0] = view.sizes[1];
  view.strides[0] = view.strides[1];
  view.sizes[1] = view.sizes[2];
  view.strides[1] = view.strides[2];
  return view;
}

Status gemm(const KernelContext& ctx, const torch_backend::GemmCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    // beta == 0: c is never read (NaN in out must not leak in).
    const bool with_c = call.beta != 0;
    if (call.out.sizes[0] == 1) {  // one matrix: the CPU's mm/addmm, into out
      at::Tensor out = host_tensor(first_matrix(call.out));
      const at::Tensor a = host_tensor(first_matrix(call.a));
      const at::Tensor b = host_tensor(first_matrix(call.b));
      if (!with_c && call.alpha == 1) {
        at::mm_out(out, a, b);
      } else {
        const at::Tensor c = with_c ? host_tensor(first_matrix(call.c)) : out;
        at::addmm_out(out, c, a, b, call.beta, call.alpha);
      }
      return;
    }
    at::Tensor out = host_tensor(call.out);
    const at::Tensor c = with_c ? host_tensor(call.c) : out;
    out.copy_(at::baddbmm(c, host_tensor(call.a), host_tensor(call.b),
                          call.beta, call.alpha));
  });
  return kSuccess;
}

Status softmax_kernel(const KernelContext& ctx, const TensorView& out,
                      const TensorView& in, std::int32_t dim) {
  fake::enqueue_kernel(ctx.stream, [out, in, dim] {
    at::Tensor result = host_tensor(out);
    at::_softmax_out(result, host_tensor(in), dim, false);
  });
  return kSuccess;
}

Status log_softmax_kernel(const KernelContext& ctx, const TensorView& out,
                          const TensorView& in, std::int32_t dim) {
  fake::enqueue_kernel(ctx.stream, [out, in, dim] {
    at::Tensor result = host_tensor(out);
    at::_log_softmax_out(result, host_tensor(in), dim, false);
  });
  return kSuccess;
}

Status softmax_backward_kernel(const KernelContext& ctx,
                               const TensorView& grad_input,
                               const TensorView& grad_output,
                               const TensorView& output, std::int32_t dim) {
  fake::enqueue_kernel(ctx.stream, [grad_input, grad_output, output, dim] {
    at::Tensor result = host_tensor(grad_input);
    at::_softmax_backward_data_out(result, host_tensor(grad_output),
                                   host_tensor(output), dim,
                                   result.scalar_type());
  });
  return kSuccess;
}

Status log_softmax_backward_kernel(const KernelContext& ctx,
                                   const TensorView& grad_input,
                                   const TensorView& grad_output,
                                   const TensorView& output, std::int32_t dim) {
  fake::enqueue_kernel(ctx.stream, [grad_input, grad_output, output, dim] {
    at::Tensor result = host_tensor(grad_input);
    at::_log_softmax_backward_data_out(result, host_tensor(grad_output),
                                       host_tensor(output), dim,
                                       result.scalar_type());
  });
  return kSuccess;
}

Status nll_loss_kernel(const KernelContext& ctx,
                       const torch_backend::NllLossCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    at::Tensor out = host_tensor(call.out);
    at::Tensor total_weight = host_tensor(call.total_weight);
    at::Tensor input = host_tensor(call.input);
    if (call.reduction == torch_backend::Reduction::None) {
      out = out.view({-1});
    }
    at::nll_loss_forward_out(out, total_weight, input, host_tensor(call.target),
                             optional_tensor(call.weight),
                             static_cast<std::int64_t>(call.reduction),
                             call.ignore_index);
  });
  return kSuccess;
}

Status nll_loss_backward_kernel(
    const KernelContext& ctx, const torch_backend::NllLossBackwardCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    at::Tensor grad_input = host_tensor(call.grad_input);
    // ATen's CPU kernel reads only the input's shape: a 1-element stand-in.
    const at::Tensor shape_of_input = at::empty_strided(
        grad_input.sizes(), std::vector<std::int64_t>(grad_input.dim(), 0),
        grad_input.options());
    at::nll_loss_backward_out(
        grad_input, host_tensor(call.grad_output), shape_of_input,
        host_tensor(call.target), optional_tensor(call.weight),
        static_cast<std::int64_t>(call.reduction), call.ignore_index,
        host_tensor(call.total_weight));
  });
  return kSuccess;
}

Status index_select_kernel(const KernelContext& ctx,
                           const torch_backend::IndexCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    at::Tensor out = host_tensor(call.out);
    at::index_select_out(out, host_tensor(call.self), call.dim,
                         host_tensor(call.index));
  });
  return kSuccess;
}

Status index_add_kernel(const KernelContext& ctx,
                        const torch_backend::IndexCall& call) {
  const at::Scalar alpha = call.alpha.is_integral
                               ? at::Scalar(call.alpha.as_int)
                               : at::Scalar(call.alpha.as_double);
  fake::enqueue_kernel(ctx.stream, [call, alpha] {
    host_tensor(call.out).index_add_(call.dim, host_tensor(call.index),
                                     host_tensor(call.source), alpha);
  });
  return kSuccess;
}

// Copies each computed gradient into its descriptor, where one was asked for.
void copy_requested(
    std::initializer_list<std::pair<const TensorView*, const at::Tensor*>>
        results) {
  for (const auto& [view, result] : results) {
    if (view->data != nullptr) {
      host_tensor(*view).copy_(*result);
    }
  }
}

Status layer_norm_kernel(const KernelContext& ctx,
                         const torch_backend::LayerNormCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    const at::Tensor input = host_tensor(call.input);
    auto [out, mean, rstd] = at::native_layer_norm(
        input, {input.size(1)}, optional_tensor(call.weight),
        optional_tensor(call.bias), call.eps);
    host_tensor(call.out).copy_(out);
    host_tensor(call.mean).copy_(mean.view(-1));
    host_tensor(call.rstd).copy_(rstd.view(-1));
  });
  return kSuccess;
}

Status layer_norm_backward_kernel(
    const KernelContext& ctx,
    const torch_backend::LayerNormBackwardCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    const at::Tensor input = host_tensor(call.input);
    const std::int64_t rows = input.size(0), cols = input.size(1);
    const bool want_bias = call.grad_bias.data != nullptr;
    // ATen's CPU kernel reads only the bias's shape.
    const std::optional<at::Tensor> bias =
        want_bias
            ? std::optional<at::Tensor>(at::empty({cols}, input.options()))
            : std::nullopt;
    auto [grad_input, grad_weight, grad_bias] = at::native_layer_norm_backward(
        host_tensor(call.grad_out), input, {cols},
        host_tensor(call.mean).view({rows, 1}),
        host_tensor(call.rstd).view({rows, 1}), optional_tensor(call.weight),
        bias,
        {call.grad_input.data != nullptr, call.grad_weight.data != nullptr,
         want_bias});
    copy_requested({{&call.grad_input, &grad_input},
                    {&call.grad_weight, &grad_weight},
                    {&call.grad_bias, &grad_bias}});
  });
  return kSuccess;
}

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3"): four 32-bit outputs per 128-bit counter under a 64-bit key.
std::array<std::uint32_t, 4> philox(std::uint64_t counter, std::uint64_t key) {
  std::array<std::uint32_t, 4> c{static_cast<std::uint32_t>(counter),
                                 static_cast<std::uint32_t>(counter >> 32), 0,
                                 0};
  std::uint32_t k0 = static_cast<std::uint32_t>(key);
  std::uint32_t k1 = static_cast<std::uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{0xD2511F53} * c[0];
    const std::uint64_t p1 = std::uint64_t{0xCD9E8D57} * c[2];
    c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k0,
         static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k1,
         static_cast<std::uint32_t>(p0)};
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
  return c;
}

Status dropout_kernel(const KernelContext& ctx,
                      const torch_backend::DropoutCall& call) {
  return visit_dtype(call.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_floating_point_v<Compute<T>>) {
      return kNotSupported;
    } else {
      fake::enqueue_kernel(ctx.stream, [call] {
        using C = Compute<T>;
        const T* in =
            static_cast<const T*>(call.input.data) + call.input.offset;
        T* out = static_cast<T*>(call.out.data) + call.out.offset;
        bool* mask = static_cast<bool*>(call.mask.data) + call.mask.offset;
        const double keep = 1 - call.p;
        const C scale = keep == 0 ? C(0) : static_cast<C>(1 / keep);
        const std::int64_t n = call.out.numel();
        const std::uint64_t seed =
            call.seed_on_device != nullptr ? *call.seed_on_device : call.seed;
        std::array<std::uint32_t, 4> block{};
        for (std::int64_t i = 0; i < n; ++i) {
          const std::uint64_t counter =
              call.offset + static_cast<std::uint64_t>(i);
          if (i == 0 || counter % 4 == 0) {
            block = philox(counter / 4, seed);
          }
          const float u = static_cast<float>(block[counter % 4] >> 8) *
                          (1.0f / 16777216.0f);
          mask[i] = u < keep;
          out[i] =
              static_cast<T>(mask[i] ? static_cast<C>(in[i]) * scale : C(0));
        }
      });
      return kSuccess;
    }
  });
}

Status gather_kernel(const KernelContext& ctx,
                     const torch_backend::IndexCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    at::Tensor out = host_tensor(call.out);
    at::gather_out(out, host_tensor(call.self), call.dim,
                   host_tensor(call.index));
  });
  return kSuccess;
}

Status scatter_add_kernel(const KernelContext& ctx,
                          const torch_backend::IndexCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    host_tensor(call.out).scatter_add_(call.dim, host_tensor(call.index),
                                       host_tensor(call.source));
  });
  return kSuccess;
}

template <bool Max>
Status arg_reduction_kernel(const KernelContext& ctx, const TensorView& values,
                            const TensorView& indices, const TensorView& in,
                            std::int32_t dim) {
  fake::enqueue_kernel(ctx.stream, [values, indices, in, dim] {
    const at::Tensor input = host_tensor(in);
    auto [found_values, found_indices] =
        Max ? at::max(input, dim, true) : at::min(input, dim, true);
    host_tensor(indices).copy_(found_indices);
    if (values.data != nullptr) {
      host_tensor(values).copy_(found_values);
    }
  });
  return kSuccess;
}

Status batch_norm_kernel(const KernelContext& ctx,
                         const torch_backend::BatchNormCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    // The running stats are tensors over device memory: updated in place.
    auto [out, save_mean, save_invstd] = at::native_batch_norm(
        host_tensor(call.input), optional_tensor(call.weight),
        optional_tensor(call.bias), optional_tensor(call.running_mean),
        optional_tensor(call.running_var), call.training, call.momentum,
        call.eps);
    host_tensor(call.out).copy_(out);
    if (call.save_mean.data != nullptr) {
      host_tensor(call.save_mean).copy_(save_mean);
      host_tensor(call.save_invstd).copy_(save_invstd);
    }
  });
  return kSuccess;
}

Status batch_norm_backward_kernel(
    const KernelContext& ctx,
    const torch_backend::BatchNormBackwardCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    auto [grad_input, grad_weight, grad_bias] = at::native_batch_norm_backward(
        host_tensor(call.grad_out), host_tensor(call.input),
        optional_tensor(call.weight), optional_tensor(call.running_mean),
        optional_tensor(call.running_var), optional_tensor(call.save_mean),
        optional_tensor(call.save_invstd), call.training, call.eps,
        {call.grad_input.data != nullptr, call.grad_weight.data != nullptr,
         call.grad_bias.data != nullptr});
    copy_requested({{&call.grad_input, &grad_input},
                    {&call.grad_weight, &grad_weight},
                    {&call.grad_bias, &grad_bias}});
  });
  return kSuccess;
}

}  // namespace

void register_fake_library_kernels(torch_backend::KernelRegistry& kernels) {
  kernels.reduction("sum", &sum_kernel);
  kernels.reduction("mean", &mean_kernel);
  kernels.reduction("amax", &amax_kernel);
  kernels.reduction("amin", &amin_kernel);
  kernels.gemm(&gemm);
  kernels.softmax("softmax", &softmax_kernel, &softmax_backward_kernel);
  kernels.softmax("log_softmax", &log_softmax_kernel,
                  &log_softmax_backward_kernel);
  kernels.nll_loss(&nll_loss_kernel, &nll_loss_backward_kernel);
  kernels.indexing("index_select", &index_select_kernel);
  kernels.indexing("index_add", &index_add_kernel);
  kernels.indexing("gather", &gather_kernel);
  kernels.indexing("scatter_add", &scatter_add_kernel);
  kernels.arg_reduction("max", &arg_reduction_kernel<true>);
  kernels.arg_reduction("min", &arg_reduction_kernel<false>);
  kernels.layer_norm(&layer_norm_kernel, &layer_norm_backward_kernel);
  kernels.dropout(&dropout_kernel);
  kernels.batch_norm(&batch_norm_kernel, &batch_norm_backward_kernel);
  kernels.variance(&variance_kernel);
}
