// The ACL emulator's operator library (libopapi.so): the aclnn operators
// torch-backend-npu maps its kernels to, computed on the host with ATen's CPU
// kernels over the emulated device memory. Each follows aclnn's two phases:
// XxxGetWorkspaceSize checks and captures the call in an executor and says
// how much workspace it needs; Xxx checks the workspace it is given and
// enqueues the computation on the stream.
//
// This file: the element-wise operators (tensor and scalar forms, unary,
// backward of activations, arange, lerp, masked_fill, where, addcmul/div).
// NnOps.cpp: dropout, copies and fills, GEMM, reductions, softmax, losses,
// norms and indexing; ConvOps.cpp: convolution and pooling.
#include "Operators.h"

EMULATOR_ALPHA_BINARY(aclnnAdd, at::add_out)
EMULATOR_ALPHA_BINARY(aclnnSub, at::sub_out)
EMULATOR_BINARY(aclnnMul, at::mul_out)
EMULATOR_BINARY(aclnnDiv, at::div_out)
EMULATOR_BINARY(aclnnMaximum, at::maximum_out)
EMULATOR_BINARY(aclnnMinimum, at::minimum_out)
EMULATOR_BINARY(aclnnEqTensor, at::eq_out)
EMULATOR_BINARY(aclnnNeTensor, at::ne_out)
EMULATOR_BINARY(aclnnLtTensor, at::lt_out)
EMULATOR_BINARY(aclnnLeTensor, at::le_out)
EMULATOR_BINARY(aclnnGtTensor, at::gt_out)
EMULATOR_BINARY(aclnnGeTensor, at::ge_out)
EMULATOR_ALPHA_SCALAR_BINARY(aclnnAdds, in_float_math<at::add_out>)
EMULATOR_ALPHA_SCALAR_BINARY(aclnnSubs, in_float_math<at::sub_out>)
EMULATOR_SCALAR_BINARY(aclnnMuls, at::mul_out)
EMULATOR_SCALAR_BINARY(aclnnDivs, at::div_out)
EMULATOR_SCALAR_BINARY(aclnnEqScalar, at::eq_out)
EMULATOR_SCALAR_BINARY(aclnnNeScalar, at::ne_out)
EMULATOR_SCALAR_BINARY(aclnnLtScalar, at::lt_out)
EMULATOR_SCALAR_BINARY(aclnnLeScalar, at::le_out)
EMULATOR_SCALAR_BINARY(aclnnGtScalar, at::gt_out)
EMULATOR_SCALAR_BINARY(aclnnGeScalar, at::ge_out)
EMULATOR_BINARY(aclnnPowTensorTensor, at::pow_out)
EMULATOR_SCALAR_BINARY(aclnnPowTensorScalar, at::pow_out)

EMULATOR_OP aclnnStatus aclnnPowScalarTensorGetWorkspaceSize(
    const aclScalar* self, const aclTensor* exponent, aclTensor* out,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnPowScalarTensor");
  auto base = plan.scalar(self);
  auto e = plan.required(exponent), o = plan.required(out);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { at::pow_out(o, base, e); });
}
EMULATOR_LAUNCH(aclnnPowScalarTensor)
EMULATOR_UNARY(aclnnExp, at::exp_out)
EMULATOR_UNARY(aclnnLog, at::log_out)
EMULATOR_UNARY(aclnnSqrt, at::sqrt_out)
EMULATOR_UNARY(aclnnRsqrt, at::rsqrt_out)
EMULATOR_UNARY(aclnnNeg, at::neg_out)
EMULATOR_UNARY(aclnnTanh, at::tanh_out)
EMULATOR_UNARY(aclnnSigmoid, at::sigmoid_out)
EMULATOR_UNARY(aclnnReciprocal, at::reciprocal_out)
EMULATOR_UNARY(aclnnSin, at::sin_out)
EMULATOR_UNARY(aclnnCos, at::cos_out)
EMULATOR_UNARY(aclnnSilu, at::silu_out)
EMULATOR_UNARY(aclnnErf, at::erf_out)

namespace {
void relu_into(at::Tensor& out, const at::Tensor& self) {
  out.copy_(at::relu(self));
}
void gelu_into(at::Tensor& out, const at::Tensor& self) {
  at::gelu_out(out, self);
}
void gelu_backward_into(at::Tensor& grad_input, const at::Tensor& grad_output,
                        const at::Tensor& self) {
  at::gelu_backward_out(grad_input, grad_output, self);
}
void tanh_backward_into(at::Tensor& grad_input, const at::Tensor& grad_output,
                        const at::Tensor& output) {
  at::tanh_backward_out(grad_input, grad_output, output);
}
}  // namespace

EMULATOR_UNARY(aclnnRelu, relu_into)
EMULATOR_UNARY(aclnnGelu, gelu_into)
EMULATOR_BINARY(aclnnGeluBackward, gelu_backward_into)
EMULATOR_BINARY(aclnnTanhBackward, tanh_backward_into)
EMULATOR_BINARY(aclnnSiluBackward, at::silu_backward_out)
EMULATOR_BINARY(aclnnSigmoidBackward, at::sigmoid_backward_out)

EMULATOR_OP aclnnStatus aclnnArangeGetWorkspaceSize(
    const aclScalar* start, const aclScalar* end, const aclScalar* step,
    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnArange");
  auto o = plan.required(out);
  auto first = plan.scalar(start), last = plan.scalar(end),
       by = plan.scalar(step);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    // Into a contiguous result of out's size (ATen's own size rule), then out.
    at::Tensor values = at::empty({o.numel()}, o.options());
    at::arange_out(values, first, last, by);
    o.copy_(values.view(o.sizes()));
  });
}
EMULATOR_LAUNCH(aclnnArange)

EMULATOR_OP aclnnStatus aclnnLerpGetWorkspaceSize(
    const aclTensor* self, const aclTensor* end, const aclTensor* weight,
    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnLerp");
  auto a = plan.required(self), b = plan.required(end),
       w = plan.required(weight), o = plan.required(out);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { at::lerp_out(o, a, b, w); });
}
EMULATOR_LAUNCH(aclnnLerp)

EMULATOR_OP aclnnStatus aclnnLerpsGetWorkspaceSize(
    const aclTensor* self, const aclTensor* end, const aclScalar* weight,
    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnLerps");
  auto a = plan.required(self), b = plan.required(end), o = plan.required(out);
  auto w = plan.scalar(weight);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { at::lerp_out(o, a, b, w); });
}
EMULATOR_LAUNCH(aclnnLerps)

EMULATOR_OP aclnnStatus aclnnInplaceMaskedFillScalarGetWorkspaceSize(
    aclTensor* selfRef, const aclTensor* mask, const aclScalar* value,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnInplaceMaskedFillScalar");
  auto dst = plan.required(selfRef), m = plan.required(mask);
  auto v = plan.scalar(value);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { dst.masked_fill_(m, v); });
}
EMULATOR_LAUNCH(aclnnInplaceMaskedFillScalar)

EMULATOR_OP aclnnStatus aclnnThresholdBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* self,
    const aclScalar* threshold, aclTensor* out, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnThresholdBackward");
  auto g = plan.required(gradOutput), a = plan.required(self),
       o = plan.required(out);
  auto t = plan.scalar(threshold);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { at::threshold_backward_out(o, g, a, t); });
}
EMULATOR_LAUNCH(aclnnThresholdBackward)

EMULATOR_OP aclnnStatus aclnnSWhereGetWorkspaceSize(
    const aclTensor* condition, const aclTensor* self, const aclTensor* other,
    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnSWhere");
  auto c = plan.required(condition), a = plan.required(self),
       b = plan.required(other), o = plan.required(out);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { at::where_out(o, c, a, b); });
}
EMULATOR_LAUNCH(aclnnSWhere)

// out = self + value * tensor1 (op) tensor2.
#define EMULATOR_POINTWISE(Name, aten_out)                              \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                       \
      const aclTensor* self, const aclTensor* tensor1,                  \
      const aclTensor* tensor2, const aclScalar* value, aclTensor* out, \
      uint64_t* workspaceSize, aclOpExecutor** executor) {              \
    Plan plan(#Name);                                                   \
    auto a = plan.required(self), t1 = plan.required(tensor1),          \
         t2 = plan.required(tensor2), o = plan.required(out);           \
    auto v = plan.scalar(value);                                        \
    return plan.finish(workspaceSize, executor, 0,                      \
                       [=]() mutable { aten_out(o, a, t1, t2, v); });   \
  }                                                                     \
  EMULATOR_LAUNCH(Name)

EMULATOR_POINTWISE(aclnnAddcmul, at::addcmul_out)
EMULATOR_POINTWISE(aclnnAddcdiv, at::addcdiv_out)
