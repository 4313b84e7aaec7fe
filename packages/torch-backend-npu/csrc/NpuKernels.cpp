// The npu device's kernels: core's kernel families mapped onto aclnn
// operators. Every operator runs through one two-phase wrapper (ACLNN below):
// XxxGetWorkspaceSize plans the call, core's caching allocator provides the
// workspace on the kernel's stream, Xxx enqueues it. Calls no operator here
// covers stay on core's copy fallback.
#include <aclnn/acl_meta.h>
#include <aclnnop/aclnn_add.h>
#include <aclnnop/aclnn_addcdiv.h>
#include <aclnnop/aclnn_addcmul.h>
#include <aclnnop/aclnn_amax.h>
#include <aclnnop/aclnn_amin.h>
#include <aclnnop/aclnn_baddbmm.h>
#include <aclnnop/aclnn_batch_norm.h>
#include <aclnnop/aclnn_batch_norm_backward.h>
#include <aclnnop/aclnn_copy.h>
#include <aclnnop/aclnn_div.h>
#include <aclnnop/aclnn_eq_scalar.h>
#include <aclnnop/aclnn_eq_tensor.h>
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
#include <aclnnop/aclnn_log.h>
#include <aclnnop/aclnn_log_softmax.h>
#include <aclnnop/aclnn_log_softmax_backward.h>
#include <aclnnop/aclnn_lt_scalar.h>
#include <aclnnop/aclnn_lt_tensor.h>
#include <aclnnop/aclnn_max_dim.h>
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
#include <aclnnop/aclnn_reduce_sum.h>
#include <aclnnop/aclnn_relu.h>
#include <aclnnop/aclnn_rsqrt.h>
#include <aclnnop/aclnn_s_where.h>
#include <aclnnop/aclnn_scatter_add.h>
#include <aclnnop/aclnn_sigmoid.h>
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
}
