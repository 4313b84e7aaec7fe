// The npu device's kernels: core's kernel families mapped onto aclnn
// operators. Every operator runs through one two-phase wrapper (ACLNN below):
// XxxGetWorkspaceSize plans the call, core's caching allocator provides the
// workspace on the kernel's stream, Xxx enqueues it. Calls no operator here
// covers stay on core's copy fallback.
#include <aclnn/acl_meta.h>
#include <aclnnop/aclnn_adaptive_avg_pool2d.h>
#include <aclnnop/aclnn_adaptive_avg_pool2d_backward.h>
#include <aclnnop/aclnn_add.h>
#include <aclnnop/aclnn_addcdiv.h>
#include <aclnnop/aclnn_addcmul.h>
#include <aclnnop/aclnn_amax.h>
#include <aclnnop/aclnn_amin.h>
#include <aclnnop/aclnn_arange.h>
#include <aclnnop/aclnn_avg_pool2d.h>
#include <aclnnop/aclnn_avg_pool2d_backward.h>
#include <aclnnop/aclnn_baddbmm.h>
#include <aclnnop/aclnn_batch_norm.h>
#include <aclnnop/aclnn_batch_norm_backward.h>
#include <aclnnop/aclnn_convolution.h>
#include <aclnnop/aclnn_convolution_backward.h>
#include <aclnnop/aclnn_copy.h>
#include <aclnnop/aclnn_cos.h>
#include <aclnnop/aclnn_div.h>
#include <aclnnop/aclnn_dropout_do_mask.h>
#include <aclnnop/aclnn_dropout_gen_mask.h>
#include <aclnnop/aclnn_eq_scalar.h>
#include <aclnnop/aclnn_eq_tensor.h>
#include <aclnnop/aclnn_erf.h>
#include <aclnnop/aclnn_exp.h>
#include <aclnnop/aclnn_fill_scalar.h>
#include <aclnnop/aclnn_gather.h>
#include <aclnnop/aclnn_ge_scalar.h>
#include <aclnnop/aclnn_ge_tensor.h>
#include <aclnnop/aclnn_gelu.h>
#include <aclnnop/aclnn_gelu_backward.h>
#include <aclnnop/aclnn_gt_scalar.h>
#include <aclnnop/aclnn_gt_tensor.h>
#include <aclnnop/aclnn_index_add.h>
#include <aclnnop/aclnn_index_select.h>
#include <aclnnop/aclnn_layer_norm.h>
#include <aclnnop/aclnn_layer_norm_backward.h>
#include <aclnnop/aclnn_le_scalar.h>
#include <aclnnop/aclnn_le_tensor.h>
#include <aclnnop/aclnn_lerp.h>
#include <aclnnop/aclnn_lerps.h>
#include <aclnnop/aclnn_log.h>
#include <aclnnop/aclnn_log_softmax.h>
#include <aclnnop/aclnn_log_softmax_backward.h>
#include <aclnnop/aclnn_lt_scalar.h>
#include <aclnnop/aclnn_lt_tensor.h>
#include <aclnnop/aclnn_masked_fill_scalar.h>
#include <aclnnop/aclnn_max_dim.h>
#include <aclnnop/aclnn_max_pool2d_with_indices.h>
#include <aclnnop/aclnn_max_pool2d_with_indices_backward.h>
#include <aclnnop/aclnn_maximum.h>
#include <aclnnop/aclnn_mean.h>
#include <aclnnop/aclnn_min_dim.h>
#include <aclnnop/aclnn_minimum.h>
#include <aclnnop/aclnn_mul.h>
#include <aclnnop/aclnn_ne_scalar.h>
#include <aclnnop/aclnn_ne_tensor.h>
#include <aclnnop/aclnn_neg.h>
#include <aclnnop/aclnn_nll_loss.h>
#include <aclnnop/aclnn_nll_loss_backward.h>
#include <aclnnop/aclnn_pow.h>
#include <aclnnop/aclnn_pow_tensor_tensor.h>
#include <aclnnop/aclnn_reciprocal.h>
#include <aclnnop/aclnn_reduce_sum.h>
#include <aclnnop/aclnn_relu.h>
#include <aclnnop/aclnn_rsqrt.h>
#include <aclnnop/aclnn_s_where.h>
#include <aclnnop/aclnn_scatter_add.h>
#include <aclnnop/aclnn_sigmoid.h>
#include <aclnnop/aclnn_sigmoid_backward.h>
#include <aclnnop/aclnn_silu.h>
#include <aclnnop/aclnn_silu_backward.h>
#include <aclnnop/aclnn_sin.h>
#include <aclnnop/aclnn_softmax.h>
#include <aclnnop/aclnn_softmax_backward.h>
#include <aclnnop/aclnn_sqrt.h>
#include <aclnnop/aclnn_sub.h>
#include <aclnnop/aclnn_tanh.h>
#include <aclnnop/aclnn_tanh_backward.h>
#include <aclnnop/aclnn_threshold_backward.h>

#include <torch_backend/DeviceKernels.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace {

using torch_backend::DType;
using torch_backend::ElementwiseCall;
using torch_backend::KernelContext;
using torch_backend::ScalarValue;
using torch_backend::Status;
using torch_backend::TensorView;

aclDataType acl_dtype(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return ACL_BOOL;
    case DType::UInt8:
      return ACL_UINT8;
    case DType::Int8:
      return ACL_INT8;
    case DType::Int16:
      return ACL_INT16;
    case DType::Int32:
      return ACL_INT32;
    case DType::Int64:
      return ACL_INT64;
    case DType::Float16:
      return ACL_FLOAT16;
    case DType::BFloat16:
      return ACL_BF16;
    case DType::Float32:
      return ACL_FLOAT;
    case DType::Float64:
      return ACL_DOUBLE;
  }
  return ACL_DT_UNDEFINED;
}

// An aclTensor over a view for the length of one call.
class Tensor {
 public:
  explicit Tensor(const TensorView& view) {
    // Storage: the elements the view spans from its base, as one dimension
    // (none for an empty view).
    std::int64_t extent = view.numel() == 0 ? 0 : view.offset + 1;
    for (std::int32_t d = 0; d < view.dim && extent > 0; ++d) {
      extent += (view.sizes[d] - 1) * view.strides[d];
    }
    tensor_ = aclCreateTensor(view.sizes, view.dim, acl_dtype(view.dtype),
                              view.strides, view.offset, ACL_FORMAT_ND, &extent,
                              1, view.data);
  }
  ~Tensor() {
    if (tensor_ != nullptr) {
      aclDestroyTensor(tensor_);
    }
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  operator aclTensor*() const { return tensor_; }

 private:
  aclTensor* tensor_ = nullptr;
};

// An optional argument: an absent view (data == nullptr) is a null
// descriptor, as aclnn takes one. (An empty tensor may also have no data:
// required arguments always use Tensor.)
class OptionalTensor {
 public:
  explicit OptionalTensor(const TensorView& view) {
    if (view.data != nullptr) {
      tensor_.emplace(view);
    }
  }
  operator aclTensor*() const {
    return tensor_ ? static_cast<aclTensor*>(*tensor_) : nullptr;
  }

 private:
  std::optional<Tensor> tensor_;
};

class Scalar {
 public:
  explicit Scalar(const ScalarValue& value)
      : as_double_(value.as_double), as_int_(value.as_int) {
    scalar_ = value.is_integral ? aclCreateScalar(&as_int_, ACL_INT64)
                                : aclCreateScalar(&as_double_, ACL_DOUBLE);
  }
  // An operand beside a tensor of `dtype`: a Bool one stays Bool, where an
  // Int64 scalar would promote the op's result to Int64 (aclnn promotes as
  // PyTorch does).
  Scalar(const ScalarValue& value, DType dtype) : Scalar(value) {
    if (dtype == DType::Bool) {
      aclDestroyScalar(scalar_);
      as_bool_ = value.as_int != 0;
      scalar_ = aclCreateScalar(&as_bool_, ACL_BOOL);
    }
  }
  ~Scalar() { aclDestroyScalar(scalar_); }
  Scalar(const Scalar&) = delete;
  Scalar& operator=(const Scalar&) = delete;
  operator aclScalar*() const { return scalar_; }

 private:
  double as_double_;
  std::int64_t as_int_;
  bool as_bool_ = false;
  aclScalar* scalar_ = nullptr;
};

class IntArray {
 public:
  explicit IntArray(const std::vector<std::int64_t>& values)
      : array_(aclCreateIntArray(values.data(), values.size())) {}
  ~IntArray() { aclDestroyIntArray(array_); }
  IntArray(const IntArray&) = delete;
  IntArray& operator=(const IntArray&) = delete;
  operator aclIntArray*() const { return array_; }

 private:
  aclIntArray* array_;
};

// aclnn's two phases for any operator: plan, take the workspace from core's
// caching allocator, enqueue on the kernel's stream. The descriptors
// (temporaries of the caller's expression) live until the launch returns.
template <typename Plan, typename Launch, typename... Args>
Status two_phase(const KernelContext& ctx, Plan plan, Launch launch,
                 Args&&... args) {
  std::uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus planned =
      plan(std::forward<Args>(args)..., &workspace_size, &executor);
  if (planned != 0) {
    return planned;
  }
  torch_backend::KernelWorkspace workspace(ctx, workspace_size);
  return launch(workspace.get(), workspace_size, executor, ctx.stream);
}

#define ACLNN(ctx, op, ...) \
  two_phase(ctx, op##GetWorkspaceSize, op, __VA_ARGS__)

// ---- element-wise ----------------------------------------------------------

#define NPU_ELEMENTWISE(name) \
  Status name(const KernelContext& ctx, const ElementwiseCall& call)

// aclnn's tensor forms read memory: a host scalar operand (`x * 2`) goes
// to the op's scalar form where aclnn has one (aclnnMuls), else the kernel
// declines it and core calls again with the value in a device tensor.
#define NPU_TENSORS_ONLY(call)           \
  if ((call).has_scalar_input()) {       \
    return torch_backend::kNotSupported; \
  }

#define NPU_UNARY(name, op)                                          \
  NPU_ELEMENTWISE(name) {                                            \
    NPU_TENSORS_ONLY(call)                                           \
    return ACLNN(ctx, op, Tensor(call.inputs[0]), Tensor(call.out)); \
  }
#define NPU_BINARY(name, op)                                              \
  NPU_ELEMENTWISE(name) {                                                 \
    NPU_TENSORS_ONLY(call)                                                \
    return ACLNN(ctx, op, Tensor(call.inputs[0]), Tensor(call.inputs[1]), \
                 Tensor(call.out));                                       \
  }
// self op other, or aclnn's scalar form when other is a host scalar.
#define NPU_BINARY_OR_SCALAR(name, op, scalar_op)                         \
  NPU_ELEMENTWISE(name) {                                                 \
    if (call.scalar_inputs[1] && !call.scalar_inputs[0]) {                \
      return ACLNN(ctx, scalar_op, Tensor(call.inputs[0]),                \
                   Scalar(call.input_values[1], call.inputs[1].dtype),    \
                   Tensor(call.out));                                     \
    }                                                                     \
    NPU_TENSORS_ONLY(call)                                                \
    return ACLNN(ctx, op, Tensor(call.inputs[0]), Tensor(call.inputs[1]), \
                 Tensor(call.out));                                       \
  }
#define NPU_ALPHA_BINARY_OR_SCALAR(name, op, scalar_op)                   \
  NPU_ELEMENTWISE(name) {                                                 \
    if (call.scalar_inputs[1] && !call.scalar_inputs[0]) {                \
      return ACLNN(ctx, scalar_op, Tensor(call.inputs[0]),                \
                   Scalar(call.input_values[1], call.inputs[1].dtype),    \
                   Scalar(call.scalars[0]), Tensor(call.out));            \
    }                                                                     \
    NPU_TENSORS_ONLY(call)                                                \
    return ACLNN(ctx, op, Tensor(call.inputs[0]), Tensor(call.inputs[1]), \
                 Scalar(call.scalars[0]), Tensor(call.out));              \
  }
#define NPU_POINTWISE(name, op)                                           \
  NPU_ELEMENTWISE(name) {                                                 \
    NPU_TENSORS_ONLY(call)                                                \
    return ACLNN(ctx, op, Tensor(call.inputs[0]), Tensor(call.inputs[1]), \
                 Tensor(call.inputs[2]), Scalar(call.scalars[0]),         \
                 Tensor(call.out));                                       \
  }

NPU_ALPHA_BINARY_OR_SCALAR(add, aclnnAdd, aclnnAdds)
NPU_ALPHA_BINARY_OR_SCALAR(sub, aclnnSub, aclnnSubs)
NPU_BINARY_OR_SCALAR(mul, aclnnMul, aclnnMuls)
NPU_BINARY_OR_SCALAR(div, aclnnDiv, aclnnDivs)
NPU_BINARY(maximum, aclnnMaximum)
NPU_BINARY(minimum, aclnnMinimum)
NPU_BINARY_OR_SCALAR(eq, aclnnEqTensor, aclnnEqScalar)
NPU_BINARY_OR_SCALAR(ne, aclnnNeTensor, aclnnNeScalar)
NPU_BINARY_OR_SCALAR(lt, aclnnLtTensor, aclnnLtScalar)
NPU_BINARY_OR_SCALAR(le, aclnnLeTensor, aclnnLeScalar)
NPU_BINARY_OR_SCALAR(gt, aclnnGtTensor, aclnnGtScalar)
NPU_BINARY_OR_SCALAR(ge, aclnnGeTensor, aclnnGeScalar)
NPU_BINARY(tanh_backward, aclnnTanhBackward)  // (grad, output)
NPU_BINARY(gelu_backward, aclnnGeluBackward)  // (grad, self)
NPU_UNARY(exp, aclnnExp)
NPU_UNARY(log, aclnnLog)
NPU_UNARY(sqrt, aclnnSqrt)
NPU_UNARY(rsqrt, aclnnRsqrt)
NPU_UNARY(neg, aclnnNeg)
NPU_UNARY(tanh, aclnnTanh)
NPU_UNARY(sigmoid, aclnnSigmoid)
NPU_UNARY(reciprocal, aclnnReciprocal)
NPU_UNARY(sin, aclnnSin)
NPU_UNARY(cos, aclnnCos)
NPU_UNARY(silu, aclnnSilu)
NPU_UNARY(erf, aclnnErf)
NPU_BINARY(silu_backward, aclnnSiluBackward)        // (grad, self)
NPU_BINARY(sigmoid_backward, aclnnSigmoidBackward)  // (grad, output)
// out[i] = start + i * step for out's n elements. aclnn takes an end: one
// past the last for integers, half a step short of the next for floating
// point, so that rounding cannot add or drop an element.
NPU_ELEMENTWISE(arange) {
  const ScalarValue& start = call.scalars[0];
  const ScalarValue& step = call.scalars[1];
  const std::int64_t n = call.out.numel();
  ScalarValue end = start;
  if (start.is_integral) {
    end.as_int = start.as_int + step.as_int * n;
  } else {
    end.as_double = start.as_double + step.as_double * (n - 0.5);
  }
  return ACLNN(ctx, aclnnArange, Scalar(start), Scalar(end), Scalar(step),
               Tensor(call.out));
}
NPU_ELEMENTWISE(lerp) {
  NPU_TENSORS_ONLY(call)
  return ACLNN(ctx, aclnnLerp, Tensor(call.inputs[0]), Tensor(call.inputs[1]),
               Tensor(call.inputs[2]), Tensor(call.out));
}
// lerp with a Python-number weight.
NPU_ELEMENTWISE(lerp_scalar) {
  NPU_TENSORS_ONLY(call)
  return ACLNN(ctx, aclnnLerps, Tensor(call.inputs[0]), Tensor(call.inputs[1]),
               Scalar(call.scalars[0]), Tensor(call.out));
}
// out = mask ? value : out, in place (the mask is inputs[0]).
NPU_ELEMENTWISE(masked_fill) {
  NPU_TENSORS_ONLY(call)
  return ACLNN(ctx, aclnnInplaceMaskedFillScalar, Tensor(call.out),
               Tensor(call.inputs[0]), Scalar(call.scalars[0], call.out.dtype));
}

// Floating dtypes only: integer powers have errors of their own (a negative
// exponent), which the fallback raises where the user reads them.
bool floating(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float16 ||
         dtype == DType::BFloat16 || dtype == DType::Float64;
}

// A tensor or host-scalar base (pow.Scalar) to tensor or host-scalar powers.
NPU_ELEMENTWISE(pow) {
  if (!floating(call.out.dtype)) {
    return torch_backend::kNotSupported;
  }
  if (call.scalar_inputs[0] && !call.scalar_inputs[1]) {
    return ACLNN(ctx, aclnnPowScalarTensor,
                 Scalar(call.input_values[0], call.inputs[0].dtype),
                 Tensor(call.inputs[1]), Tensor(call.out));
  }
  if (call.scalar_inputs[1] && !call.scalar_inputs[0]) {
    return ACLNN(ctx, aclnnPowTensorScalar, Tensor(call.inputs[0]),
                 Scalar(call.input_values[1], call.inputs[1].dtype),
                 Tensor(call.out));
  }
  NPU_TENSORS_ONLY(call)
  return ACLNN(ctx, aclnnPowTensorTensor, Tensor(call.inputs[0]),
               Tensor(call.inputs[1]), Tensor(call.out));
}
// pow(self, exponent) with the exponent a Python number.
NPU_ELEMENTWISE(pow_scalar) {
  NPU_TENSORS_ONLY(call)
  if (!floating(call.out.dtype)) {
    return torch_backend::kNotSupported;
  }
  return ACLNN(ctx, aclnnPowTensorScalar, Tensor(call.inputs[0]),
               Scalar(call.scalars[0]), Tensor(call.out));
}
NPU_UNARY(relu, aclnnRelu)
NPU_UNARY(gelu, aclnnGelu)
NPU_POINTWISE(addcmul, aclnnAddcmul)
NPU_POINTWISE(addcdiv, aclnnAddcdiv)

NPU_ELEMENTWISE(where) {
  NPU_TENSORS_ONLY(call)
  return ACLNN(ctx, aclnnSWhere, Tensor(call.inputs[0]), Tensor(call.inputs[1]),
               Tensor(call.inputs[2]), Tensor(call.out));
}
NPU_ELEMENTWISE(threshold_backward) {
  NPU_TENSORS_ONLY(call)
  return ACLNN(ctx, aclnnThresholdBackward, Tensor(call.inputs[0]),
               Tensor(call.inputs[1]), Scalar(call.scalars[0]),
               Tensor(call.out));
}
NPU_ELEMENTWISE(copy) {
  NPU_TENSORS_ONLY(call)
  return ACLNN(ctx, aclnnInplaceCopy, Tensor(call.out), Tensor(call.inputs[0]));
}
NPU_ELEMENTWISE(fill) {
  return ACLNN(ctx, aclnnInplaceFillScalar, Tensor(call.out),
               Scalar(call.scalars[0]));
}

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

constexpr std::int8_t kKeepDtype = 0;  // cubeMathType: no reduced precision

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
// aclnn takes the mask of gradients to compute; core leaves out the others.
class OutputMask {
 public:
  OutputMask(const TensorView& first, const TensorView& second,
             const TensorView& third) {
    const bool mask[3] = {first.data != nullptr, second.data != nullptr,
                          third.data != nullptr};
    array_ = aclCreateBoolArray(mask, 3);
  }
  ~OutputMask() { aclDestroyBoolArray(array_); }
  OutputMask(const OutputMask&) = delete;
  OutputMask& operator=(const OutputMask&) = delete;
  operator aclBoolArray*() const { return array_; }

 private:
  aclBoolArray* array_;
};

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

TORCH_BACKEND_DEFINE_DEVICE_KERNELS(kernels) {
  const std::pair<const char*, torch_backend::ElementwiseKernel> elementwise[] =
      {{"add", &add},
       {"sub", &sub},
       {"mul", &mul},
       {"div", &div},
       {"maximum", &maximum},
       {"minimum", &minimum},
       {"eq", &eq},
       {"ne", &ne},
       {"lt", &lt},
       {"le", &le},
       {"gt", &gt},
       {"ge", &ge},
       {"where", &where},
       {"exp", &exp},
       {"log", &log},
       {"sqrt", &sqrt},
       {"rsqrt", &rsqrt},
       {"neg", &neg},
       {"tanh", &tanh},
       {"sigmoid", &sigmoid},
       {"reciprocal", &reciprocal},
       {"pow", &pow},
       {"pow_scalar", &pow_scalar},
       {"sin", &sin},
       {"cos", &cos},
       {"silu", &silu},
       {"erf", &erf},
       {"silu_backward", &silu_backward},
       {"sigmoid_backward", &sigmoid_backward},
       {"arange", &arange},
       {"lerp", &lerp},
       {"lerp_scalar", &lerp_scalar},
       {"masked_fill", &masked_fill},
       {"relu", &relu},
       {"gelu", &gelu},
       {"threshold_backward", &threshold_backward},
       {"tanh_backward", &tanh_backward},
       {"gelu_backward", &gelu_backward},
       {"addcmul", &addcmul},
       {"addcdiv", &addcdiv},
       {"fill", &fill},
       {"copy", &copy}};
  for (const auto& [name, kernel] : elementwise) {
    kernels.elementwise(name, kernel);
  }
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
  kernels.convolution(&convolution, &convolution_backward);
  kernels.pooling("max_pool2d", &max_pool, &max_pool_backward);
  kernels.pooling("avg_pool2d", &avg_pool, &avg_pool_backward);
  kernels.pooling("adaptive_avg_pool2d", &adaptive_avg_pool,
                  &adaptive_avg_pool_backward);
}
