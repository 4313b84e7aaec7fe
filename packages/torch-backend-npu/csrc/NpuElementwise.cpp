// npu's element-wise kernels on aclnn: tensor forms, the scalar forms
// (aclnnMuls, aclnnEqScalar) for a host scalar operand, and the few that
// compose two operators.
#include <aclnnop/aclnn_add.h>
#include <aclnnop/aclnn_addcdiv.h>
#include <aclnnop/aclnn_addcmul.h>
#include <aclnnop/aclnn_arange.h>
#include <aclnnop/aclnn_copy.h>
#include <aclnnop/aclnn_cos.h>
#include <aclnnop/aclnn_div.h>
#include <aclnnop/aclnn_eq_scalar.h>
#include <aclnnop/aclnn_eq_tensor.h>
#include <aclnnop/aclnn_erf.h>
#include <aclnnop/aclnn_exp.h>
#include <aclnnop/aclnn_fill_scalar.h>
#include <aclnnop/aclnn_ge_scalar.h>
#include <aclnnop/aclnn_ge_tensor.h>
#include <aclnnop/aclnn_gelu.h>
#include <aclnnop/aclnn_gelu_backward.h>
#include <aclnnop/aclnn_gt_scalar.h>
#include <aclnnop/aclnn_gt_tensor.h>
#include <aclnnop/aclnn_le_scalar.h>
#include <aclnnop/aclnn_le_tensor.h>
#include <aclnnop/aclnn_lerp.h>
#include <aclnnop/aclnn_lerps.h>
#include <aclnnop/aclnn_log.h>
#include <aclnnop/aclnn_lt_scalar.h>
#include <aclnnop/aclnn_lt_tensor.h>
#include <aclnnop/aclnn_masked_fill_scalar.h>
#include <aclnnop/aclnn_maximum.h>
#include <aclnnop/aclnn_minimum.h>
#include <aclnnop/aclnn_mul.h>
#include <aclnnop/aclnn_ne_scalar.h>
#include <aclnnop/aclnn_ne_tensor.h>
#include <aclnnop/aclnn_neg.h>
#include <aclnnop/aclnn_pow.h>
#include <aclnnop/aclnn_pow_tensor_tensor.h>
#include <aclnnop/aclnn_reciprocal.h>
#include <aclnnop/aclnn_relu.h>
#include <aclnnop/aclnn_rsqrt.h>
#include <aclnnop/aclnn_s_where.h>
#include <aclnnop/aclnn_sigmoid.h>
#include <aclnnop/aclnn_sigmoid_backward.h>
#include <aclnnop/aclnn_silu.h>
#include <aclnnop/aclnn_silu_backward.h>
#include <aclnnop/aclnn_sin.h>
#include <aclnnop/aclnn_sqrt.h>
#include <aclnnop/aclnn_sub.h>
#include <aclnnop/aclnn_tanh.h>
#include <aclnnop/aclnn_tanh_backward.h>
#include <aclnnop/aclnn_threshold_backward.h>

#include "Aclnn.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace {

using namespace npu;  // Aclnn.h: the descriptors, ACLNN, core's kernel types

// ---- element-wise ----------------------------------------------------------

// Every kernel NPU_ELEMENTWISE defines, by the op name core knows it by:
// defining a kernel lists it, so none is left out of the registration.
std::vector<std::pair<const char*, torch_backend::ElementwiseKernel>>&
listed_kernels() {
  static std::vector<std::pair<const char*, torch_backend::ElementwiseKernel>>
      kernels;
  return kernels;
}
struct Listed {
  Listed(const char* name, torch_backend::ElementwiseKernel kernel) {
    listed_kernels().emplace_back(name, kernel);
  }
};

#define NPU_ELEMENTWISE(name)                                         \
  Status name(const KernelContext& ctx, const ElementwiseCall& call); \
  const Listed listed_##name(#name, &name);                           \
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

}  // namespace

void register_npu_elementwise(torch_backend::KernelRegistry& kernels) {
  for (const auto& [name, kernel] : listed_kernels()) {
    kernels.elementwise(name, kernel);
  }
}
