// ATen's _foreach_* ops (the optimizers' multi-tensor path) over the
// backend's multi-tensor kernels: one kernel call per list where ATen's
// composite path makes one op call, and so one launch, per tensor. Lists
// ATen's own fast route refuses (mixed dtypes or devices, overlapping or
// non-dense tensors, a scalar that would promote), and lists the kernel
// declines, take ATen's slow path: the op tensor by tensor, through the
// element-wise kernels. The same split as CUDA's foreach kernels.
#include <ATen/native/ForeachUtils.h>
#include <ATen/ops/_foreach_add_native.h>
#include <ATen/ops/_foreach_addcdiv_native.h>
#include <ATen/ops/_foreach_addcmul_native.h>
#include <ATen/ops/_foreach_div_native.h>
#include <ATen/ops/_foreach_lerp_native.h>
#include <ATen/ops/_foreach_mul_native.h>
#include <ATen/ops/_foreach_sqrt_native.h>
#include <ATen/ops/_foreach_sub_native.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <initializer_list>
#include <utility>
#include <vector>

#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"

namespace torch_backend {
namespace {

using at::Scalar;
using at::Tensor;
using at::TensorList;
using ScalarList = at::ArrayRef<Scalar>;

// Where tensor t's operand (or scalar argument) comes from: a list, one
// scalar for every tensor, or a scalar per tensor.
struct Source {
  TensorList list;
  const Scalar* scalar = nullptr;
  ScalarList scalars;

  Source(TensorList list) : list(list) {}  // NOLINT: reads as the list
  Source(const Scalar& scalar) : scalar(&scalar) {}  // NOLINT
  Source(ScalarList scalars) : scalars(scalars) {}   // NOLINT
  bool is_list() const { return scalar == nullptr && scalars.empty(); }
  const Scalar& scalar_for(size_t t) const {
    return scalar != nullptr ? *scalar : scalars[t];
  }
};

// A tensor the fast route accepted (dense, not overlapping) as one dense
// dimension over its storage span.
TensorView dense_view(const Tensor& tensor) {
  TensorView view;
  view.data = tensor.storage().mutable_data();
  view.offset = tensor.storage_offset();
  view.dtype = *kernel_dtype(tensor.scalar_type());
  view.dim = 1;
  view.sizes[0] = tensor.numel();
  view.strides[0] = 1;
  return view;
}

// One call of the multi-tensor kernel `name` for out[t] = op(inputs[t]...,
// scalars[t]...); false when the backend has no such kernel or declined.
bool run_multi_tensor(const char* name, TensorList out,
                      at::ArrayRef<Source> inputs,
                      at::ArrayRef<Source> scalars = {}) {
  const MultiTensorKernel kernel = multi_tensor_kernel(name);
  const at::ScalarType dtype = out[0].scalar_type();
  if (kernel == nullptr || !kernel_dtype(dtype)) {
    return false;
  }
  std::vector<ElementwiseCall> calls;
  calls.reserve(out.size());
  for (size_t t = 0; t < out.size(); ++t) {
    if (out[t].numel() == 0) {
      continue;
    }
    ElementwiseCall& call = calls.emplace_back();
    call.out = dense_view(out[t]);
    for (const Source& input : inputs) {
      const int k = call.num_inputs++;
      if (input.is_list()) {
        call.inputs[k] = dense_view(input.list[t]);
      } else {
        set_scalar_input(call, k, call.out.dtype,
                         opmath_scalar(input.scalar_for(t), dtype));
      }
    }
    for (const Source& scalar : scalars) {
      call.scalars[call.num_scalars++] =
          scalar_value(scalar.scalar_for(t), dtype);
    }
  }
  if (calls.empty()) {
    return true;
  }
  const c10::Device device = out[0].device();
  c10::DeviceGuard guard(device);
  return kernel_ran(kernel(kernel_context(device), calls.data(),
                           static_cast<int32_t>(calls.size())));
}

std::vector<Tensor> empty_like_each(TensorList tensors) {
  std::vector<Tensor> result;
  result.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    result.push_back(at::empty_like(t));
  }
  return result;
}

// ATen's fast-route test for these lists and scalars; `to_float`: the op
// makes integer inputs floating (div, sqrt), which the fast route refuses.
bool fast(std::initializer_list<TensorList> lists, ScalarList scalars = {},
          bool to_float = false) {
  return at::native::can_use_fast_route(lists, scalars, to_float);
}

// In place: the multi-tensor kernel on the fast route, else `slow()`.
template <class Slow>
void in_place(const char* kernel, bool fast_route, TensorList self,
              at::ArrayRef<Source> inputs, at::ArrayRef<Source> scalars,
              Slow slow) {
  if (!fast_route || !run_multi_tensor(kernel, self, inputs, scalars)) {
    slow();
  }
}

// Functional: new outputs from the multi-tensor kernel on the fast route,
// else `slow()`'s.
template <class Slow>
std::vector<Tensor> functional(const char* kernel, bool fast_route,
                               TensorList self, at::ArrayRef<Source> inputs,
                               at::ArrayRef<Source> scalars, Slow slow) {
  if (fast_route) {
    std::vector<Tensor> out = empty_like_each(self);
    if (run_multi_tensor(kernel, out, inputs, scalars)) {
      return out;
    }
  }
  return slow();
}

// ---- the ops: in-place and functional forms of each overload -------------
// Each checks what ATen's own kernels check, then runs as above: `kernel`
// is the multi-tensor kernel, `slow` ATen's per-tensor path, `to_float`
// whether the op makes integer inputs floating (the fast route refuses
// those).

// self op other, element by element.
#define TORCH_BACKEND_BINARY_LIST(op, to_float, slow)                         \
  void op##_list_(TensorList self, TensorList other) {                        \
    at::native::check_foreach_api_restrictions(self, other);                  \
    in_place(#op, fast({self, other}, {}, to_float), self, {self, other}, {}, \
             [&] { at::native::slow##_(self, other); });                      \
  }                                                                           \
  std::vector<Tensor> op##_list(TensorList self, TensorList other) {          \
    at::native::check_foreach_api_restrictions(self, other);                  \
    return functional(#op, fast({self, other}, {}, to_float), self,           \
                      {self, other}, {},                                      \
                      [&] { return at::native::slow(self, other); });         \
  }

TORCH_BACKEND_BINARY_LIST(mul, false, foreach_tensor_mul_list_kernel_slow)
TORCH_BACKEND_BINARY_LIST(div, true, foreach_tensor_div_list_kernel_slow)
#undef TORCH_BACKEND_BINARY_LIST

// self + alpha * other (add), self - alpha * other (sub).
#define TORCH_BACKEND_ALPHA_LIST(op, slow)                                   \
  void op##_list_(TensorList self, TensorList other, const Scalar& alpha) {  \
    at::native::check_foreach_api_restrictions(self, other);                 \
    in_place(#op, fast({self, other}, alpha), self, {self, other}, {alpha},  \
             [&] { at::native::slow##_(self, other, alpha); });              \
  }                                                                          \
  std::vector<Tensor> op##_list(TensorList self, TensorList other,           \
                                const Scalar& alpha) {                       \
    at::native::check_foreach_api_restrictions(self, other);                 \
    return functional(#op, fast({self, other}, alpha), self, {self, other},  \
                      {alpha},                                               \
                      [&] { return at::native::slow(self, other, alpha); }); \
  }

TORCH_BACKEND_ALPHA_LIST(add, foreach_tensor_add_list_kernel_slow)
TORCH_BACKEND_ALPHA_LIST(sub, foreach_tensor_sub_list_kernel_slow)
#undef TORCH_BACKEND_ALPHA_LIST

// A scalar (or a scalar per tensor) as the second operand; `alpha`: the
// kernel also takes an alpha (add, sub), 1 here.
#define TORCH_BACKEND_SCALAR_OPERAND(op, kind, Kind, to_float, alpha, slow) \
  void op##_##kind##_(TensorList self, Kind scalar) {                       \
    at::native::check_foreach_api_restrictions(self);                       \
    in_place(#op, fast({self}, scalar, to_float), self, {self, scalar},     \
             alpha_of(alpha), [&] { at::native::slow##_(self, scalar); });  \
  }                                                                         \
  std::vector<Tensor> op##_##kind(TensorList self, Kind scalar) {           \
    at::native::check_foreach_api_restrictions(self);                       \
    return functional(#op, fast({self}, scalar, to_float), self,            \
                      {self, scalar}, alpha_of(alpha),                      \
                      [&] { return at::native::slow(self, scalar); });      \
  }

at::ArrayRef<Source> alpha_of(bool alpha) {
  static const Scalar value(1);
  static const Source one[] = {Source(value)};
  return alpha ? at::ArrayRef<Source>(one) : at::ArrayRef<Source>();
}

TORCH_BACKEND_SCALAR_OPERAND(add, scalar, const Scalar&, false, true,
                             foreach_tensor_add_scalar_kernel_slow)
TORCH_BACKEND_SCALAR_OPERAND(sub, scalar, const Scalar&, false, true,
                             foreach_tensor_sub_scalar_kernel_slow)
TORCH_BACKEND_SCALAR_OPERAND(mul, scalar, const Scalar&, false, false,
                             foreach_tensor_mul_scalar_kernel_slow)
TORCH_BACKEND_SCALAR_OPERAND(div, scalar, const Scalar&, true, false,
                             foreach_tensor_div_scalar_kernel_slow)
TORCH_BACKEND_SCALAR_OPERAND(add, scalarlist, ScalarList, false, true,
                             foreach_tensor_add_scalarlist_kernel_slow)
TORCH_BACKEND_SCALAR_OPERAND(sub, scalarlist, ScalarList, false, true,
                             foreach_tensor_sub_scalarlist_kernel_slow)
TORCH_BACKEND_SCALAR_OPERAND(mul, scalarlist, ScalarList, false, false,
                             foreach_tensor_mul_scalarlist_kernel_slow)
TORCH_BACKEND_SCALAR_OPERAND(div, scalarlist, ScalarList, true, false,
                             foreach_tensor_div_scalarlist_kernel_slow)
#undef TORCH_BACKEND_SCALAR_OPERAND

// addcmul / addcdiv: self + value * t1 (op) t2, value one or per tensor.
#define TORCH_BACKEND_POINTWISE(op, kind, Kind, to_float, slow)                \
  void op##_##kind##_(TensorList self, TensorList t1, TensorList t2,           \
                      Kind value) {                                            \
    at::native::check_foreach_api_restrictions(self, t1, t2);                  \
    in_place(#op, fast({self, t1, t2}, value, to_float), self, {self, t1, t2}, \
             {value}, [&] { at::native::slow##_(self, t1, t2, value); });      \
  }                                                                            \
  std::vector<Tensor> op##_##kind(TensorList self, TensorList t1,              \
                                  TensorList t2, Kind value) {                 \
    at::native::check_foreach_api_restrictions(self, t1, t2);                  \
    return functional(#op, fast({self, t1, t2}, value, to_float), self,        \
                      {self, t1, t2}, {value},                                 \
                      [&] { return at::native::slow(self, t1, t2, value); });  \
  }

TORCH_BACKEND_POINTWISE(addcmul, scalar, const Scalar&, false,
                        foreach_tensor_addcmul_scalar_slow)
TORCH_BACKEND_POINTWISE(addcmul, scalarlist, ScalarList, false,
                        foreach_tensor_addcmul_scalarlist_slow)
TORCH_BACKEND_POINTWISE(addcdiv, scalar, const Scalar&, true,
                        foreach_tensor_addcdiv_scalar_slow)
TORCH_BACKEND_POINTWISE(addcdiv, scalarlist, ScalarList, true,
                        foreach_tensor_addcdiv_scalarlist_slow)
#undef TORCH_BACKEND_POINTWISE

// lerp with one weight: self + weight * (end - self); floating only.
void lerp_scalar_(TensorList self, TensorList end, const Scalar& weight) {
  at::native::check_foreach_api_restrictions(self, end);
  in_place("lerp_scalar", fast({self, end}, {}, true), self, {self, end},
           {weight}, [&] {
             at::native::foreach_tensor_lerp_list_kernel_slow_(self, end,
                                                               weight);
           });
}
std::vector<Tensor> lerp_scalar(TensorList self, TensorList end,
                                const Scalar& weight) {
  at::native::check_foreach_api_restrictions(self, end);
  return functional("lerp_scalar", fast({self, end}, {}, true), self,
                    {self, end}, {weight}, [&] {
                      return at::native::foreach_tensor_lerp_list_kernel_slow(
                          self, end, weight);
                    });
}

void sqrt_(TensorList self) {
  at::native::check_foreach_api_restrictions(self);
  in_place("sqrt", fast({self}, {}, true), self, {self}, {},
           [&] { at::native::foreach_tensor_sqrt_slow_(self); });
}
std::vector<Tensor> sqrt(TensorList self) {
  at::native::check_foreach_api_restrictions(self);
  return functional("sqrt", fast({self}, {}, true), self, {self}, {},
                    [&] { return at::native::foreach_tensor_sqrt_slow(self); });
}

// Every overload: (ATen overload, multi-tensor kernel, registration).
struct ForeachOp {
  const char* overload;
  const char* kernel;
  void (*add)(torch::Library&, const char*);
};

template <auto Fn>
void impl(torch::Library& aten, const char* overload) {
  register_kernel(aten, overload, TORCH_FN(Fn));
}

const ForeachOp kForeachOps[] = {
    {"_foreach_add_.List", "add", &impl<add_list_>},
    {"_foreach_add.List", "add", &impl<add_list>},
    {"_foreach_add_.Scalar", "add", &impl<add_scalar_>},
    {"_foreach_add.Scalar", "add", &impl<add_scalar>},
    {"_foreach_add_.ScalarList", "add", &impl<add_scalarlist_>},
    {"_foreach_add.ScalarList", "add", &impl<add_scalarlist>},
    {"_foreach_sub_.List", "sub", &impl<sub_list_>},
    {"_foreach_sub.List", "sub", &impl<sub_list>},
    {"_foreach_sub_.Scalar", "sub", &impl<sub_scalar_>},
    {"_foreach_sub.Scalar", "sub", &impl<sub_scalar>},
    {"_foreach_sub_.ScalarList", "sub", &impl<sub_scalarlist_>},
    {"_foreach_sub.ScalarList", "sub", &impl<sub_scalarlist>},
    {"_foreach_mul_.List", "mul", &impl<mul_list_>},
    {"_foreach_mul.List", "mul", &impl<mul_list>},
    {"_foreach_mul_.Scalar", "mul", &impl<mul_scalar_>},
    {"_foreach_mul.Scalar", "mul", &impl<mul_scalar>},
    {"_foreach_mul_.ScalarList", "mul", &impl<mul_scalarlist_>},
    {"_foreach_mul.ScalarList", "mul", &impl<mul_scalarlist>},
    {"_foreach_div_.List", "div", &impl<div_list_>},
    {"_foreach_div.List", "div", &impl<div_list>},
    {"_foreach_div_.Scalar", "div", &impl<div_scalar_>},
    {"_foreach_div.Scalar", "div", &impl<div_scalar>},
    {"_foreach_div_.ScalarList", "div", &impl<div_scalarlist_>},
    {"_foreach_div.ScalarList", "div", &impl<div_scalarlist>},
    {"_foreach_addcmul_.Scalar", "addcmul", &impl<addcmul_scalar_>},
    {"_foreach_addcmul.Scalar", "addcmul", &impl<addcmul_scalar>},
    {"_foreach_addcmul_.ScalarList", "addcmul", &impl<addcmul_scalarlist_>},
    {"_foreach_addcmul.ScalarList", "addcmul", &impl<addcmul_scalarlist>},
    {"_foreach_addcdiv_.Scalar", "addcdiv", &impl<addcdiv_scalar_>},
    {"_foreach_addcdiv.Scalar", "addcdiv", &impl<addcdiv_scalar>},
    {"_foreach_addcdiv_.ScalarList", "addcdiv", &impl<addcdiv_scalarlist_>},
    {"_foreach_addcdiv.ScalarList", "addcdiv", &impl<addcdiv_scalarlist>},
    {"_foreach_lerp_.Scalar", "lerp_scalar", &impl<lerp_scalar_>},
    {"_foreach_lerp.Scalar", "lerp_scalar", &impl<lerp_scalar>},
    {"_foreach_sqrt_", "sqrt", &impl<sqrt_>},
    {"_foreach_sqrt", "sqrt", &impl<sqrt>},
};

}  // namespace

std::vector<std::pair<std::string, std::string>> foreach_ops() {
  std::vector<std::pair<std::string, std::string>> ops;
  for (const ForeachOp& op : kForeachOps) {
    ops.emplace_back(op.overload, op.kernel);
  }
  return ops;
}

std::vector<std::string> register_foreach_kernels(torch::Library& aten) {
  std::vector<std::string> registered;
  for (const ForeachOp& op : kForeachOps) {
    if (multi_tensor_kernel(op.kernel) != nullptr &&
        !forced_to_fallback(op.overload)) {
      op.add(aten, op.overload);
      registered.emplace_back(op.overload);
    }
  }
  return registered;
}

}  // namespace torch_backend
