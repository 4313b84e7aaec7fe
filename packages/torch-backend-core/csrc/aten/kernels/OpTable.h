// Internal: which ATen ops run on which device kernel, declared once as data.
// Each row registers the listed overloads (functional, out=, in-place; a
// missing one is nullptr) when the backend provides the row's kernel. The
// generic work comes from the op's structured meta class (at::meta::), or,
// for the few unstructured ops, from a meta class of ours with the same shape
// (ElementwiseMeta.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <torch/library.h>

// X(row id, kernel, meta class, functional, out, in-place, dtype rule).
// Dtype rules (DeviceKernels.h): Common: every operand in the compute dtype;
// Comparison: out is Bool; Where: the output's dtype, the first input (a
// condition or mask) Bool; Output: the output's dtype (no inputs).
#define TORCH_BACKEND_ELEMENTWISE_OPS(X)                                       \
  X(add, add, at::meta::structured_add_Tensor, "add.Tensor", "add.out",        \
    "add_.Tensor", Common)                                                     \
  X(sub, sub, at::meta::structured_sub_Tensor, "sub.Tensor", "sub.out",        \
    "sub_.Tensor", Common)                                                     \
  X(mul, mul, at::meta::structured_mul_Tensor, "mul.Tensor", "mul.out",        \
    "mul_.Tensor", Common)                                                     \
  X(div, div, at::meta::structured_div_Tensor, "div.Tensor", "div.out",        \
    "div_.Tensor", Common)                                                     \
  X(maximum, maximum, at::meta::structured_maximum, "maximum", "maximum.out",  \
    nullptr, Common)                                                           \
  X(minimum, minimum, at::meta::structured_minimum, "minimum", "minimum.out",  \
    nullptr, Common)                                                           \
  X(pow, pow, at::meta::structured_pow_Tensor_Tensor, "pow.Tensor_Tensor",     \
    "pow.Tensor_Tensor_out", "pow_.Tensor", Common)                            \
  X(pow_scalar, pow_scalar, at::meta::structured_pow_Tensor_Scalar,            \
    "pow.Tensor_Scalar", "pow.Tensor_Scalar_out", "pow_.Scalar", Common)       \
  X(eq_t, eq, at::meta::structured_eq_Tensor, "eq.Tensor", "eq.Tensor_out",    \
    "eq_.Tensor", Comparison)                                                  \
  X(eq_s, eq, at::meta::structured_eq_Scalar, "eq.Scalar", "eq.Scalar_out",    \
    "eq_.Scalar", Comparison)                                                  \
  X(ne_t, ne, at::meta::structured_ne_Tensor, "ne.Tensor", "ne.Tensor_out",    \
    "ne_.Tensor", Comparison)                                                  \
  X(ne_s, ne, at::meta::structured_ne_Scalar, "ne.Scalar", "ne.Scalar_out",    \
    "ne_.Scalar", Comparison)                                                  \
  X(lt_t, lt, at::meta::structured_lt_Tensor, "lt.Tensor", "lt.Tensor_out",    \
    "lt_.Tensor", Comparison)                                                  \
  X(lt_s, lt, at::meta::structured_lt_Scalar, "lt.Scalar", "lt.Scalar_out",    \
    "lt_.Scalar", Comparison)                                                  \
  X(le_t, le, at::meta::structured_le_Tensor, "le.Tensor", "le.Tensor_out",    \
    "le_.Tensor", Comparison)                                                  \
  X(le_s, le, at::meta::structured_le_Scalar, "le.Scalar", "le.Scalar_out",    \
    "le_.Scalar", Comparison)                                                  \
  X(gt_t, gt, at::meta::structured_gt_Tensor, "gt.Tensor", "gt.Tensor_out",    \
    "gt_.Tensor", Comparison)                                                  \
  X(gt_s, gt, at::meta::structured_gt_Scalar, "gt.Scalar", "gt.Scalar_out",    \
    "gt_.Scalar", Comparison)                                                  \
  X(ge_t, ge, at::meta::structured_ge_Tensor, "ge.Tensor", "ge.Tensor_out",    \
    "ge_.Tensor", Comparison)                                                  \
  X(ge_s, ge, at::meta::structured_ge_Scalar, "ge.Scalar", "ge.Scalar_out",    \
    "ge_.Scalar", Comparison)                                                  \
  X(where, where, WhereMeta, "where.self", "where.self_out", nullptr, Where)   \
  X(exp, exp, at::meta::structured_exp, "exp", "exp.out", "exp_", Common)      \
  X(log, log, at::meta::structured_log, "log", "log.out", "log_", Common)      \
  X(sqrt, sqrt, at::meta::structured_sqrt, "sqrt", "sqrt.out", "sqrt_",        \
    Common)                                                                    \
  X(rsqrt, rsqrt, at::meta::structured_rsqrt, "rsqrt", "rsqrt.out", "rsqrt_",  \
    Common)                                                                    \
  X(sin, sin, at::meta::structured_sin, "sin", "sin.out", "sin_", Common)      \
  X(cos, cos, at::meta::structured_cos, "cos", "cos.out", "cos_", Common)      \
  X(tanh, tanh, at::meta::structured_tanh, "tanh", "tanh.out", "tanh_",        \
    Common)                                                                    \
  X(sigmoid, sigmoid, at::meta::structured_sigmoid, "sigmoid", "sigmoid.out",  \
    "sigmoid_", Common)                                                        \
  X(neg, neg, at::meta::structured_neg, "neg", "neg.out", "neg_", Common)      \
  X(reciprocal, reciprocal, at::meta::structured_reciprocal, "reciprocal",     \
    "reciprocal.out", "reciprocal_", Common)                                   \
  X(erf, erf, at::meta::structured_erf, "erf", "erf.out", "erf_", Common)      \
  X(silu, silu, at::meta::structured_silu, "silu", "silu.out", "silu_",        \
    Common)                                                                    \
  X(relu, relu, ReluMeta, "relu", nullptr, "relu_", Common)                    \
  X(gelu, gelu, at::meta::structured_gelu, "gelu", "gelu.out", "gelu_",        \
    Common)                                                                    \
  X(clamp, clamp, ClampMeta, "clamp", "clamp.out", "clamp_", Common)           \
  X(clamp_min, clamp_min, at::meta::structured_clamp_min, "clamp_min",         \
    "clamp_min.out", "clamp_min_", Common)                                     \
  X(clamp_max, clamp_max, at::meta::structured_clamp_max, "clamp_max",         \
    "clamp_max.out", "clamp_max_", Common)                                     \
  X(threshold_backward, threshold_backward,                                    \
    at::meta::structured_threshold_backward, "threshold_backward",             \
    "threshold_backward.grad_input", nullptr, Common)                          \
  X(sigmoid_backward, sigmoid_backward, at::meta::structured_sigmoid_backward, \
    "sigmoid_backward", "sigmoid_backward.grad_input", nullptr, Common)        \
  X(tanh_backward, tanh_backward, at::meta::structured_tanh_backward,          \
    "tanh_backward", "tanh_backward.grad_input", nullptr, Common)              \
  X(silu_backward, silu_backward, at::meta::structured_silu_backward,          \
    "silu_backward", "silu_backward.grad_input", nullptr, Common)              \
  X(gelu_backward, gelu_backward, at::meta::structured_gelu_backward,          \
    "gelu_backward", "gelu_backward.grad_input", nullptr, Common)              \
  X(addcmul, addcmul, at::meta::structured_addcmul, "addcmul", "addcmul.out",  \
    "addcmul_", Common)                                                        \
  X(addcdiv, addcdiv, at::meta::structured_addcdiv, "addcdiv", "addcdiv.out",  \
    "addcdiv_", Common)                                                        \
  X(lerp, lerp, at::meta::structured_lerp_Tensor, "lerp.Tensor",               \
    "lerp.Tensor_out", "lerp_.Tensor", Common)                                 \
  X(lerp_scalar, lerp_scalar, at::meta::structured_lerp_Scalar, "lerp.Scalar", \
    "lerp.Scalar_out", "lerp_.Scalar", Common)                                 \
  X(masked_fill, masked_fill, MaskedFillMeta, nullptr, nullptr,                \
    "masked_fill_.Scalar", Where)                                              \
  X(fill, fill, FillMeta, nullptr, nullptr, "fill_.Scalar", Output)

// X(kernel, meta class, functional, out, value of an empty reduction). amax
// and amin of nothing are errors their meta functions raise.
#define TORCH_BACKEND_REDUCTION_OPS(X)                            \
  X(sum, at::meta::structured_sum_dim_IntList, "sum.dim_IntList", \
    "sum.IntList_out", 0.0)                                       \
  X(mean, at::meta::structured_mean_dim, "mean.dim", "mean.out",  \
    std::numeric_limits<double>::quiet_NaN())                     \
  X(amax, at::meta::structured_amax, "amax", "amax.out", 0.0)     \
  X(amin, at::meta::structured_amin, "amin", "amin.out", 0.0)

// X(row id, meta class, operands, functional, out, in-place): one "gemm"
// kernel serves them all (Gemm.cpp maps each op's arguments).
#define TORCH_BACKEND_GEMM_OPS(X)                                           \
  X(mm, at::meta::structured_mm, MmOperands, "mm", "mm.out", nullptr)       \
  X(bmm, at::meta::structured_bmm, MmOperands, "bmm", "bmm.out", nullptr)   \
  X(addmm, at::meta::structured_addmm, AddmmOperands, "addmm", "addmm.out", \
    "addmm_")                                                               \
  X(baddbmm, at::meta::structured_baddbmm, AddmmOperands, "baddbmm",        \
    "baddbmm.out", "baddbmm_")

// X(kernel, meta, functional, out, backward meta, backward, backward out):
// the backend registers forward and backward kernels together.
#define TORCH_BACKEND_SOFTMAX_OPS(X)                                       \
  X(softmax, at::meta::structured__softmax, "_softmax", "_softmax.out",    \
    at::meta::structured__softmax_backward_data, "_softmax_backward_data", \
    "_softmax_backward_data.out")                                          \
  X(log_softmax, at::meta::structured__log_softmax, "_log_softmax",        \
    "_log_softmax.out", at::meta::structured__log_softmax_backward_data,   \
    "_log_softmax_backward_data", "_log_softmax_backward_data.out")

namespace torch_backend {

// Registers every op of the tables whose kernel the backend has; returns the
// registered overloads ("add.Tensor", ...).
std::vector<std::string> register_elementwise_kernels(torch::Library& aten);
std::vector<std::string> register_reduction_kernels(torch::Library& aten);
std::vector<std::string> register_gemm_kernels(torch::Library& aten);
std::vector<std::string> register_softmax_kernels(torch::Library& aten);
std::vector<std::string> register_loss_kernels(torch::Library& aten);
std::vector<std::string> register_copy_kernels(torch::Library& aten);
std::vector<std::string> register_index_kernels(torch::Library& aten);
std::vector<std::string> register_norm_kernels(torch::Library& aten);
std::vector<std::string> register_random_kernels(torch::Library& aten);
std::vector<std::string> register_convolution_kernels(torch::Library& aten);
std::vector<std::string> register_pooling_kernels(torch::Library& aten);
// SDPA's fused path (and torch._fused_sdp_choice, always).
std::vector<std::string> register_attention_kernels(torch::Library& aten);
// Ops core composes from other kernels (Composites.cpp): _safe_softmax,
// mse_loss, tril/triu; and whether the backend has every kernel each uses.
std::vector<std::string> register_composite_kernels(torch::Library& aten);
bool safe_softmax_composable();
bool mse_loss_composable();
bool triangle_composable();
// The _foreach_ ops over the multi-tensor kernels (Foreach.cpp), and every
// (overload, multi-tensor kernel) pair it serves.
std::vector<std::string> register_foreach_kernels(torch::Library& aten);
std::vector<std::pair<std::string, std::string>> foreach_ops();
// ATen's own native kernels (arange) over device-kernel DispatchStubs.
std::vector<std::string> register_stub_kernels(torch::Library& aten);

// Every op of the tables: (ATen overload, family, kernel name, whether the
// active backend provides the kernel, whether TORCH_BACKEND_FORCE_FALLBACK
// keeps the op on the fallback all the same). For `python -m torch_backend
// ops`.
struct OpTableRow {
  std::string op, family, kernel;
  bool on_device;
  bool forced;
};
std::vector<OpTableRow> op_table();  // OpTableRows.cpp

// The kernel names a family accepts (for checking a backend's registry).
std::vector<std::string> known_kernels(const std::string& family);

}  // namespace torch_backend
