// The npu device's kernels: core's kernel families mapped onto aclnn
// operators. Every operator runs through one two-phase wrapper (Aclnn.h):
// XxxGetWorkspaceSize plans the call, core's caching allocator provides the
// workspace on the kernel's stream, Xxx enqueues it. Element-wise kernels are
// in NpuElementwise.cpp, convolution and pooling in NpuConvolution.cpp; the
// other families below. Calls no operator covers stay on core's copy fallback.
#include <aclnnop/aclnn_amax.h>
#include <aclnnop/aclnn_amin.h>
#include <aclnnop/aclnn_baddbmm.h>
#include <aclnnop/aclnn_batch_norm.h>
#include <aclnnop/aclnn_batch_norm_backward.h>
#include <aclnnop/aclnn_copy.h>
#include <aclnnop/aclnn_dropout_do_mask.h>
#include <aclnnop/aclnn_dropout_gen_mask.h>
#include <aclnnop/aclnn_fill_scalar.h>
#include <aclnnop/aclnn_gather.h>
#include <aclnnop/aclnn_index_add.h>
#include <aclnnop/aclnn_index_select.h>
#include <aclnnop/aclnn_layer_norm.h>
#include <aclnnop/aclnn_layer_norm_backward.h>
#include <aclnnop/aclnn_log_softmax.h>
#include <aclnnop/aclnn_log_softmax_backward.h>
#include <aclnnop/aclnn_max_dim.h>
#include <aclnnop/aclnn_mean.h>
#include <aclnnop/aclnn_min_dim.h>
#include <aclnnop/aclnn_ne_scalar.h>
#include <aclnnop/aclnn_nll_loss.h>
#include <aclnnop/aclnn_nll_loss_backward.h>
#include <aclnnop/aclnn_reduce_sum.h>
#include <aclnnop/aclnn_scatter_add.h>
#include <aclnnop/aclnn_softmax.h>
#include <aclnnop/aclnn_softmax_backward.h>

#include "Aclnn.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

// NpuElementwise.cpp, NpuConvolution.cpp
void register_npu_elementwise(torch_backend::KernelRegistry& kernels);
void register_npu_convolution_and_pooling(
    torch_backend::KernelRegistry& kernels);

namespace {

using namespace npu;  // Aclnn.h: the descriptors, ACLNN, core's kernel types

// ---- reductions ------------------------------------------------------------

// The dimensions `out` (same sizes as `in`, stride 0 where reduced) folds,
// and out as aclnn sees it: those dimensions kept with size 1.
struct Reduced {
  std::vector<std::int64_t> dims;
  TensorView out;
};

Reduced reduced(const TensorView& out) {
  Reduced r{{}, out};
  for (std::int32_t d = 0; d < out.dim; ++d) {
    if (out.strides[d] == 0 && out.sizes[d] > 1) {
      r.dims.push_back(d);
      r.out.sizes[d] = 1;
    }
  }
  return r;
}

template <typename Reduce>
Status reduce(const KernelContext& ctx, const TensorView& out,
              const TensorView& in, Reduce reduce_dims) {
  Reduced r = reduced(out);
  if (r.dims.empty()) {  // nothing folds: aclnn would reduce everything
    return ACLNN(ctx, aclnnInplaceCopy, Tensor(out), Tensor(in));
  }
  return reduce_dims(Tensor(in), IntArray(r.dims), Tensor(r.out));
}

Status sum(const KernelContext& ctx, const TensorView& out,
           const TensorView& in) {
  return reduce(ctx, out, in, [&](auto&& self, auto&& dims, auto&& result) {
    return ACLNN(ctx, aclnnReduceSum, self, dims, true, acl_dtype(out.dtype),
                 result);
  });
}
Status mean(const KernelContext& ctx, const TensorView& out,
            const TensorView& in) {
  return reduce(ctx, out, in, [&](auto&& self, auto&& dims, auto&& result) {
    return ACLNN(ctx, aclnnMean, self, dims, true, acl_dtype(out.dtype),
                 result);
  });
}
Status amax(const KernelContext& ctx, const TensorView& out,
            const TensorView& in) {
  return reduce(ctx, out, in, [&](auto&& self, auto&& dims, auto&& result) {
    return ACLNN(ctx, aclnnAmax, self, dims, true, result);
  });
}
Status amin(const KernelContext& ctx, const TensorView& out,
            const TensorView& in) {
  return reduce(ctx, out, in, [&](auto&& self, auto&& dims, auto&& result) {
    return ACLNN(ctx, aclnnAmin, self, dims, true, result);
  });
}

// ---- matrix multiply -------------------------------------------------------

Status gemm(const KernelContext& ctx, const torch_backend::GemmCall& call) {
  ScalarValue beta;
  beta.as_double = call.beta;
  ScalarValue alpha;
  alpha.as_double = call.alpha;
  // Without c (beta == 0) baddbmm ignores self: out stands in for it.
  const TensorView& self = call.c.data != nullptr ? call.c : call.out;
  return ACLNN(ctx, aclnnBaddbmm, Tensor(self), Tensor(call.a), Tensor(call.b),
               Scalar(beta), Scalar(alpha), Tensor(call.out), kKeepDtype);
}

// ---- along one dimension ---------------------------------------------------

Status softmax(const KernelContext& ctx, const TensorView& out,
               const TensorView& in, std::int32_t dim) {
  return ACLNN(ctx, aclnnSoftmax, Tensor(in), dim, Tensor(out));
}
Status softmax_backward(const KernelContext& ctx, const TensorView& grad_input,
                        const TensorView& grad_output, const TensorView& output,
                        std::int32_t dim) {
  return ACLNN(ctx, aclnnSoftmaxBackward, Tensor(grad_output), Tensor(output),
               dim, Tensor(grad_input));
}
Status log_softmax(const KernelContext& ctx, const TensorView& out,
                   const TensorView& in, std::int32_t dim) {
  return ACLNN(ctx, aclnnLogSoftmax, Tensor(in), dim, Tensor(out));
}
Status log_softmax_backward(const KernelContext& ctx,
                            const TensorView& grad_input,
                            const TensorView& grad_output,
                            const TensorView& output, std::int32_t dim) {
  return ACLNN(ctx, aclnnLogSoftmaxBackward, Tensor(grad_output),
               Tensor(output), dim, Tensor(grad_input));
}

// ---- losses and normalisation ---------------------------------------------

Status nll_loss(const KernelContext& ctx,
                const torch_backend::NllLossCall& call) {
  return ACLNN(ctx, aclnnNLLLoss, Tensor(call.input), Tensor(call.target),
               OptionalTensor(call.weight),
               static_cast<std::int64_t>(call.reduction), call.ignore_index,
               Tensor(call.out), Tensor(call.total_weight));
}
// aclnn asks for the forward's input only for its shape: grad_input has it.
Status nll_loss_backward(const KernelContext& ctx,
                         const torch_backend::NllLossBackwardCall& call) {
  return ACLNN(ctx, aclnnNLLLossBackward, Tensor(call.grad_output),
               Tensor(call.grad_input), Tensor(call.target),
               OptionalTensor(call.weight),
               static_cast<std::int64_t>(call.reduction), call.ignore_index,
               Tensor(call.total_weight), Tensor(call.grad_input));
}

Status layer_norm(const KernelContext& ctx,
                  const torch_backend::LayerNormCall& call) {
  const IntArray normalized({call.input.sizes[1]});
  return ACLNN(ctx, aclnnLayerNorm, Tensor(call.input), normalized,
               OptionalTensor(call.weight), OptionalTensor(call.bias), call.eps,
               Tensor(call.out), OptionalTensor(call.mean),
               OptionalTensor(call.rstd));
}

Status batch_norm(const KernelContext& ctx,
                  const torch_backend::BatchNormCall& call) {
  return ACLNN(ctx, aclnnBatchNorm, Tensor(call.input),
               OptionalTensor(call.weight), OptionalTensor(call.bias),
               OptionalTensor(call.running_mean),
               OptionalTensor(call.running_var), call.training, call.momentum,
               call.eps, Tensor(call.out), OptionalTensor(call.save_mean),
               OptionalTensor(call.save_invstd));
}
Status batch_norm_backward(const KernelContext& ctx,
                           const torch_backend::BatchNormBackwardCall& call) {
  return ACLNN(
      ctx, aclnnBatchNormBackward, Tensor(call.grad_out), Tensor(call.input),
      OptionalTensor(call.weight), OptionalTensor(call.running_mean),
      OptionalTensor(call.running_var), OptionalTensor(call.save_mean),
      OptionalTensor(call.save_invstd), call.training, call.eps,
      OutputMask(call.grad_input, call.grad_weight, call.grad_bias),
      OptionalTensor(call.grad_input), OptionalTensor(call.grad_weight),
      OptionalTensor(call.grad_bias));
}

// ---- indexing and extrema along one dimension -----------------------------

Status index_select(const KernelContext& ctx,
                    const torch_backend::IndexCall& call) {
  return ACLNN(ctx, aclnnIndexSelect, Tensor(call.self),
               static_cast<std::int64_t>(call.dim), Tensor(call.index),
               Tensor(call.out));
}
Status gather(const KernelContext& ctx, const torch_backend::IndexCall& call) {
  return ACLNN(ctx, aclnnGather, Tensor(call.self),
               static_cast<std::int64_t>(call.dim), Tensor(call.index),
               Tensor(call.out));
}
// Core has copied self into out: both accumulate into out in place.
Status scatter_add(const KernelContext& ctx,
                   const torch_backend::IndexCall& call) {
  return ACLNN(ctx, aclnnScatterAdd, Tensor(call.out),
               static_cast<std::int64_t>(call.dim), Tensor(call.index),
               Tensor(call.source), Tensor(call.out));
}
Status index_add(const KernelContext& ctx,
                 const torch_backend::IndexCall& call) {
  return ACLNN(ctx, aclnnIndexAdd, Tensor(call.out),
               static_cast<std::int64_t>(call.dim), Tensor(call.index),
               Tensor(call.source), Scalar(call.alpha), Tensor(call.out));
}

// values may be absent (argmax): aclnn writes them anyway, to a workspace.
template <typename Plan, typename Launch>
Status arg_extremum(const KernelContext& ctx, Plan plan, Launch launch,
                    const TensorView& values, const TensorView& indices,
                    const TensorView& in, std::int32_t dim) {
  TensorView written = values;
  std::optional<torch_backend::KernelWorkspace> scratch;
  if (values.data == nullptr) {
    written = indices;
    written.dtype = in.dtype;
    written.offset = 0;
    std::int64_t step = 1;
    for (std::int32_t d = written.dim; d-- > 0;) {
      written.strides[d] = step;
      step *= written.sizes[d];
    }
    scratch.emplace(ctx,
                    static_cast<std::size_t>(std::max<std::int64_t>(step, 1) *
                                             element_size(in.dtype)));
    written.data = scratch->get();
  }
  return two_phase(ctx, plan, launch, Tensor(in),
                   static_cast<std::int64_t>(dim), true, Tensor(written),
                   Tensor(indices));
}
Status max_dim(const KernelContext& ctx, const TensorView& values,
               const TensorView& indices, const TensorView& in,
               std::int32_t dim) {
  return arg_extremum(ctx, aclnnMaxDimGetWorkspaceSize, aclnnMaxDim, values,
                      indices, in, dim);
}
Status min_dim(const KernelContext& ctx, const TensorView& values,
               const TensorView& indices, const TensorView& in,
               std::int32_t dim) {
  return arg_extremum(ctx, aclnnMinDimGetWorkspaceSize, aclnnMinDim, values,
                      indices, in, dim);
}

Status layer_norm_backward(const KernelContext& ctx,
                           const torch_backend::LayerNormBackwardCall& call) {
  const IntArray normalized({call.input.sizes[1]});
  return ACLNN(
      ctx, aclnnLayerNormBackward, Tensor(call.grad_out), Tensor(call.input),
      normalized, Tensor(call.mean), Tensor(call.rstd),
      OptionalTensor(call.weight), static_cast<aclTensor*>(nullptr),
      OutputMask(call.grad_input, call.grad_weight, call.grad_bias),
      OptionalTensor(call.grad_input), OptionalTensor(call.grad_weight),
      OptionalTensor(call.grad_bias));
}

// ---- dropout ---------------------------------------------------------------

// A contiguous 1-D view of `n` elements at `data` (a workspace).
TensorView flat_view(void* data, DType dtype, std::int64_t n) {
  TensorView view;
  view.data = data;
  view.dtype = dtype;
  view.dim = 1;
  view.sizes[0] = n;
  view.strides[0] = 1;
  return view;
}

// aclnn draws a bit mask (aclnnDropoutGenMaskV2; in a graph its Tensor form,
// which reads the seed core refreshes before each replay from device memory)
// and applies it (aclnnDropoutDoMask). Core's Bool mask is that mask applied
// to ones, nonzero where an element is kept.
Status dropout(const KernelContext& ctx,
               const torch_backend::DropoutCall& call) {
  const DType dtype = call.input.dtype;
  if (dtype != DType::Float32 && dtype != DType::Float16 &&
      dtype != DType::BFloat16) {
    return torch_backend::kNotSupported;
  }
  const std::int64_t n = call.input.numel();
  const std::int64_t mask_bytes = (n + 127) / 128 * 128 / 8;
  torch_backend::KernelWorkspace bits_memory(ctx, mask_bytes);
  const TensorView bits =
      flat_view(bits_memory.get(), DType::UInt8, mask_bytes);
  const IntArray shape({n});
  const auto offset = static_cast<std::int64_t>(call.offset);
  Status drawn = 0;
  if (call.seed_on_device != nullptr) {
    torch_backend::KernelWorkspace zero_memory(ctx, sizeof(std::int64_t));
    const TensorView zero = flat_view(zero_memory.get(), DType::Int64, 1);
    ScalarValue zero_value;
    zero_value.is_integral = true;
    drawn =
        ACLNN(ctx, aclnnInplaceFillScalar, Tensor(zero), Scalar(zero_value));
    if (drawn == 0) {
      const TensorView seed = flat_view(
          const_cast<std::uint64_t*>(call.seed_on_device), DType::Int64, 1);
      drawn =
          ACLNN(ctx, aclnnDropoutGenMaskV2Tensor, shape, call.p, Tensor(seed),
                Tensor(zero), offset, acl_dtype(dtype), Tensor(bits));
    }
  } else {
    drawn = ACLNN(ctx, aclnnDropoutGenMaskV2, shape, call.p,
                  static_cast<std::int64_t>(call.seed), offset,
                  acl_dtype(dtype), Tensor(bits));
  }
  if (drawn != 0) {
    return drawn;
  }
  const std::size_t bytes = n * torch_backend::element_size(dtype);
  torch_backend::KernelWorkspace ones_memory(ctx, bytes);
  torch_backend::KernelWorkspace kept_memory(ctx, bytes);
  const TensorView ones = flat_view(ones_memory.get(), dtype, n);
  const TensorView kept = flat_view(kept_memory.get(), dtype, n);
  ScalarValue one;
  one.as_double = 1;
  ScalarValue zero;
  Status status = ACLNN(ctx, aclnnInplaceFillScalar, Tensor(ones), Scalar(one));
  if (status == 0) {
    status = ACLNN(ctx, aclnnDropoutDoMask, Tensor(ones), Tensor(bits), call.p,
                   Tensor(kept));
  }
  if (status == 0) {
    status = ACLNN(ctx, aclnnNeScalar, Tensor(kept), Scalar(zero),
                   Tensor(call.mask));
  }
  if (status == 0) {
    status = ACLNN(ctx, aclnnDropoutDoMask, Tensor(call.input), Tensor(bits),
                   call.p, Tensor(call.out));
  }
  return status;
}

}  // namespace

TORCH_BACKEND_DEFINE_DEVICE_KERNELS(kernels) {
  register_npu_elementwise(kernels);
  kernels.reduction("sum", &sum);
  kernels.reduction("mean", &mean);
  kernels.reduction("amax", &amax);
  kernels.reduction("amin", &amin);
  kernels.gemm(&gemm);
  kernels.softmax("softmax", &softmax, &softmax_backward);
  kernels.softmax("log_softmax", &log_softmax, &log_softmax_backward);
  kernels.nll_loss(&nll_loss, &nll_loss_backward);
  kernels.layer_norm(&layer_norm, &layer_norm_backward);
  kernels.batch_norm(&batch_norm, &batch_norm_backward);
  kernels.indexing("index_select", &index_select);
  kernels.indexing("gather", &gather);
  kernels.indexing("scatter_add", &scatter_add);
  kernels.indexing("index_add", &index_add);
  kernels.arg_reduction("max", &max_dim);
  kernels.arg_reduction("min", &min_dim);
  kernels.dropout(&dropout);
  register_npu_convolution_and_pooling(kernels);
}
