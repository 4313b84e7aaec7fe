// Internal: which ATen ops run on which device-kernel family, declared once
// as data. Each row registers the op's functional, out= and in-place
// overloads when the backend provides the kernel of that name; the generic
// implementation comes from the op's structured meta function (at::meta::).
#pragma once

#include <string>
#include <vector>

#include <torch/library.h>

// X(kernel and op name, functional/in-place overload, meta class, variant)
#define TORCH_BACKEND_BINARY_OPS(X)                  \
  X(add, "Tensor", structured_add_Tensor, WithAlpha) \
  X(sub, "Tensor", structured_sub_Tensor, WithAlpha) \
  X(mul, "Tensor", structured_mul_Tensor, NoAlpha)   \
  X(div, "Tensor", structured_div_Tensor, NoAlpha)

// X(kernel and op name, meta class): functional, .out and in-place (name_).
#define TORCH_BACKEND_UNARY_OPS(X)     \
  X(exp, structured_exp)               \
  X(log, structured_log)               \
  X(sqrt, structured_sqrt)             \
  X(rsqrt, structured_rsqrt)           \
  X(sin, structured_sin)               \
  X(cos, structured_cos)               \
  X(tanh, structured_tanh)             \
  X(sigmoid, structured_sigmoid)       \
  X(neg, structured_neg)               \
  X(reciprocal, structured_reciprocal) \
  X(erf, structured_erf)               \
  X(silu, structured_silu)

namespace torch_backend {

// Registers every op of the tables whose kernel the backend has; returns the
// registered overloads ("add.Tensor", ...).
std::vector<std::string> register_elementwise_kernels(torch::Library& aten);

// Every op of the tables: (ATen overload, family, kernel name, whether the
// active backend provides the kernel). For `python -m torch_backend ops`.
struct OpTableRow {
  std::string op, family, kernel;
  bool on_device;
};
std::vector<OpTableRow> op_table();

}  // namespace torch_backend
