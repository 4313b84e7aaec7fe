// ATen kernels for element-wise ops, over the backend's device kernels.
//
// The generic work is ATen's own: each op's structured meta function (the
// class torchgen generates, e.g. at::meta::structured_add_Tensor) builds a
// TensorIterator that decides the result dtype, broadcasts, checks devices
// and shapes, and asks for its output through set_output_raw_strided, which
// the three wrappers below answer the way PyTorch's generated in-tree
// registrations do: allocate (functional), resize out= (out), or check the
// self tensor (in-place). The iterator's coalesced shape and strides become
// the backend's TensorViews.
#include <ATen/native/Resize.h>
#include <ATen/ops/add_meta.h>
#include <ATen/ops/cos_meta.h>
#include <ATen/ops/div_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/erf_meta.h>
#include <ATen/ops/exp_meta.h>
#include <ATen/ops/log_meta.h>
#include <ATen/ops/mul_meta.h>
#include <ATen/ops/neg_meta.h>
#include <ATen/ops/reciprocal_meta.h>
#include <ATen/ops/rsqrt_meta.h>
#include <ATen/ops/sigmoid_meta.h>
#include <ATen/ops/silu_meta.h>
#include <ATen/ops/sin_meta.h>
#include <ATen/ops/sqrt_meta.h>
#include <ATen/ops/sub_meta.h>
#include <ATen/ops/tanh_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <functional>
#include <optional>
#include <vector>

#include <torch_backend/Runtime.h>

#include "../../runtime/Streams.h"
#include "../fallback/Fallback.h"
#include "KernelTable.h"
#include "OpTable.h"

namespace torch_backend {
namespace {

using at::IntArrayRef;
using at::Tensor;
using at::TensorIteratorBase;
using at::TensorOptions;

template <class Meta>
struct Functional final : Meta {
  void set_output_raw_strided(int64_t index, IntArrayRef sizes,
                              IntArrayRef strides,
                              TensorOptions options) override {
    output_ = strides.empty() ? at::empty(sizes, options)
                              : at::empty_strided(sizes, strides, options);
    Meta::set_output_raw_strided(index, sizes, strides, options);
  }
  const Tensor& maybe_get_output(int64_t) override { return output_; }
  Tensor output_;
};

template <class Meta>
struct Out final : Meta {
  explicit Out(const Tensor& out) : out_(out) {}
  void set_output_raw_strided(int64_t index, IntArrayRef sizes,
                              IntArrayRef strides,
                              TensorOptions options) override {
    TORCH_CHECK(options.dtype() == out_.dtype(),
                "Expected out tensor to have dtype ", options.dtype(),
                ", but got ", out_.dtype(), " instead");
    TORCH_CHECK(options.device() == out_.device(),
                "Expected out tensor to have device ", options.device(),
                ", but got ", out_.device(), " instead");
    // Only restride what was resized; otherwise the out tensor's own
    // strides stand (as in PyTorch's generated out= wrappers).
    if (at::native::resize_output(out_, sizes) && !strides.empty()) {
      out_.as_strided_(sizes, strides);
    }
    Meta::set_output_raw_strided(index, sizes, strides, options);
  }
  const Tensor& maybe_get_output(int64_t) override { return out_; }
  const Tensor& out_;
};

template <class Meta>
struct InPlace final : Meta {
  explicit InPlace(const Tensor& self) : self_(self) {}
  void set_output_raw_strided(int64_t index, IntArrayRef sizes,
                              IntArrayRef strides,
                              TensorOptions options) override {
    TORCH_CHECK(options.dtype() == self_.dtype(),
                "Bad in-place call: input tensor dtype ", self_.dtype(),
                " and output tensor dtype ", options.dtype(), " should match");
    TORCH_CHECK(sizes == self_.sizes(), "Bad in-place call: input tensor size ",
                self_.sizes(), " and output tensor size ", sizes,
                " should match");
    Meta::set_output_raw_strided(index, sizes, strides, options);
  }
  const Tensor& maybe_get_output(int64_t) override { return self_; }
  const Tensor& self_;
};

std::optional<DType> kernel_dtype(at::ScalarType type) {
  switch (type) {
    case at::kBool:
      return DType::Bool;
    case at::kByte:
      return DType::UInt8;
    case at::kChar:
      return DType::Int8;
    case at::kShort:
      return DType::Int16;
    case at::kInt:
      return DType::Int32;
    case at::kLong:
      return DType::Int64;
    case at::kHalf:
      return DType::Float16;
    case at::kBFloat16:
      return DType::BFloat16;
    case at::kFloat:
      return DType::Float32;
    case at::kDouble:
      return DType::Float64;
    default:
      return std::nullopt;
  }
}

TensorView view_of(const TensorIteratorBase& iter, int arg) {
  TensorView view;
  view.data = iter.data_ptr(arg);
  view.dtype = *kernel_dtype(iter.dtype(arg));
  view.dim = static_cast<int32_t>(iter.ndim());
  const int64_t element = iter.element_size(arg);
  for (int d = 0; d < view.dim; ++d) {
    view.sizes[d] = iter.shape()[d];
    view.strides[d] = iter.strides(arg)[d] / element;
  }
  return view;
}

ScalarValue scalar_value(const c10::Scalar& s, at::ScalarType compute) {
  ScalarValue value;
  value.is_integral = at::isIntegralType(compute, /*includeBool=*/true);
  if (value.is_integral) {
    value.as_int = s.to<int64_t>();
    value.as_double = static_cast<double>(value.as_int);
  } else {
    value.as_double = s.to<double>();
    value.as_int = static_cast<int64_t>(value.as_double);
  }
  return value;
}

// Calls the backend's kernel on views of the iterator's operands (0: out).
using Launch =
    std::function<Status(const KernelContext& ctx, const TensorView* views)>;

// Runs a built element-wise iterator through `launch`. Inputs of another
// dtype than the computation's, and CPU scalars, are first made device
// tensors of that dtype; a differently typed output gets a temporary. Returns
// false when the backend declined (the caller then falls back).
bool run_elementwise(TensorIteratorBase& iter, const Launch& launch) {
  if (iter.numel() == 0) {
    return true;
  }
  const at::ScalarType compute = iter.common_dtype();
  if (!kernel_dtype(compute)) {
    return false;
  }
  const Tensor& out = iter.tensor(0);
  const c10::Device device = out.device();
  c10::DeviceGuard guard(device);
  const int operands = iter.ntensors();
  bool uniform = true;
  for (int i = 0; i < operands; ++i) {
    uniform = uniform && iter.dtype(i) == compute &&
              (i == 0 || !iter.is_cpu_scalar(i));
  }
  if (!uniform) {
    const bool typed_out = iter.dtype(0) == compute;
    const Tensor result = typed_out
                              ? out
                              : at::empty_strided(out.sizes(), out.strides(),
                                                  out.options().dtype(compute));
    std::vector<Tensor> inputs;
    inputs.reserve(operands);  // the config borrows them: no reallocation
    at::TensorIteratorConfig config;
    config.set_check_mem_overlap(false).add_output(result);
    for (int i = 1; i < operands; ++i) {
      inputs.push_back(iter.tensor(i).to(device, compute));
      config.add_const_input(inputs.back());
    }
    auto same = config.build();
    if (!run_elementwise(same, launch)) {
      return false;
    }
    if (!typed_out) {
      out.copy_(result);
    }
    return true;
  }
  KernelContext ctx;
  ctx.device = device.index();
  ctx.stream = native_stream(current_stream(device.index()));
  TensorView views[3];
  for (int i = 0; i < operands; ++i) {
    views[i] = view_of(iter, i);
  }
  const Status status = launch(ctx, views);
  if (status == kNotSupported) {
    return false;
  }
  TORCH_BACKEND_CHECK(status);
  return true;
}

// An op's device kernel, and its overloads' schemas for the boxed fallback
// that runs calls the kernel declines (a dtype it does not implement).
template <class Kernel>
struct KernelOp {
  Kernel kernel = nullptr;
  std::optional<c10::OperatorHandle> functional, out, inplace;
};
using BinaryOp = KernelOp<BinaryKernel>;
using UnaryOp = KernelOp<UnaryKernel>;

void run_or_fall_back(TensorIteratorBase& iter, const Launch& launch,
                      const c10::OperatorHandle& handle,
                      torch::jit::Stack stack, Tensor* result) {
  if (run_elementwise(iter, launch)) {
    if (result != nullptr) {
      *result = iter.tensor(0);
    }
    return;
  }
  run_fallback(handle, &stack);
  if (result != nullptr) {
    *result = stack.back().toTensor();
  }
}

Launch binary_launch(BinaryKernel kernel, const c10::Scalar& alpha,
                     at::ScalarType compute) {
  const ScalarValue value = scalar_value(alpha, compute);
  return [kernel, value](const KernelContext& ctx, const TensorView* v) {
    return kernel(ctx, v[0], v[1], v[2], value);
  };
}

Launch unary_launch(UnaryKernel kernel) {
  return [kernel](const KernelContext& ctx, const TensorView* v) {
    return kernel(ctx, v[0], v[1]);
  };
}

template <class Meta, const BinaryOp* Op>
struct WithAlpha {
  static Tensor functional(const Tensor& a, const Tensor& b,
                           const c10::Scalar& alpha) {
    Functional<Meta> iter;
    iter.meta(a, b, alpha);
    Tensor result;
    run_or_fall_back(iter,
                     binary_launch(Op->kernel, alpha, iter.common_dtype()),
                     *Op->functional, {a, b, alpha}, &result);
    return result;
  }
  static Tensor& out(const Tensor& a, const Tensor& b, const c10::Scalar& alpha,
                     Tensor& out) {
    Out<Meta> iter(out);
    iter.meta(a, b, alpha);
    run_or_fall_back(iter,
                     binary_launch(Op->kernel, alpha, iter.common_dtype()),
                     *Op->out, {a, b, alpha, out}, nullptr);
    return out;
  }
  static Tensor& inplace(Tensor& self, const Tensor& b,
                         const c10::Scalar& alpha) {
    InPlace<Meta> iter(self);
    iter.meta(self, b, alpha);
    run_or_fall_back(iter,
                     binary_launch(Op->kernel, alpha, iter.common_dtype()),
                     *Op->inplace, {self, b, alpha}, nullptr);
    return self;
  }
};

template <class Meta, const BinaryOp* Op>
struct NoAlpha {
  static Tensor functional(const Tensor& a, const Tensor& b) {
    Functional<Meta> iter;
    iter.meta(a, b);
    Tensor result;
    run_or_fall_back(iter, binary_launch(Op->kernel, 1, iter.common_dtype()),
                     *Op->functional, {a, b}, &result);
    return result;
  }
  static Tensor& out(const Tensor& a, const Tensor& b, Tensor& out) {
    Out<Meta> iter(out);
    iter.meta(a, b);
    run_or_fall_back(iter, binary_launch(Op->kernel, 1, iter.common_dtype()),
                     *Op->out, {a, b, out}, nullptr);
    return out;
  }
  static Tensor& inplace(Tensor& self, const Tensor& b) {
    InPlace<Meta> iter(self);
    iter.meta(self, b);
    run_or_fall_back(iter, binary_launch(Op->kernel, 1, iter.common_dtype()),
                     *Op->inplace, {self, b}, nullptr);
    return self;
  }
};

template <class Meta, const UnaryOp* Op>
struct Unary {
  static Tensor functional(const Tensor& self) {
    Functional<Meta> iter;
    iter.meta(self);
    Tensor result;
    run_or_fall_back(iter, unary_launch(Op->kernel), *Op->functional, {self},
                     &result);
    return result;
  }
  static Tensor& out(const Tensor& self, Tensor& out) {
    Out<Meta> iter(out);
    iter.meta(self);
    run_or_fall_back(iter, unary_launch(Op->kernel), *Op->out, {self, out},
                     nullptr);
    return out;
  }
  static Tensor& inplace(Tensor& self) {
    InPlace<Meta> iter(self);
    iter.meta(self);
    run_or_fall_back(iter, unary_launch(Op->kernel), *Op->inplace, {self},
                     nullptr);
    return self;
  }
};

#define TORCH_BACKEND_BINARY_STATE(name, overload, Meta, Variant) \
  BinaryOp name##_op;
TORCH_BACKEND_BINARY_OPS(TORCH_BACKEND_BINARY_STATE)
#undef TORCH_BACKEND_BINARY_STATE
#define TORCH_BACKEND_UNARY_STATE(name, Meta) UnaryOp name##_op;
TORCH_BACKEND_UNARY_OPS(TORCH_BACKEND_UNARY_STATE)
#undef TORCH_BACKEND_UNARY_STATE

c10::OperatorHandle find(const char* name, const char* overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
}

}  // namespace

std::vector<std::string> register_elementwise_kernels(torch::Library& aten) {
  std::vector<std::string> registered;
#define TORCH_BACKEND_REGISTER_BINARY(name, overload, Meta, Variant)       \
  if (BinaryKernel kernel = binary_kernel(#name)) {                        \
    using Impl = Variant<at::meta::Meta, &name##_op>;                      \
    name##_op = {kernel, find("aten::" #name, overload),                   \
                 find("aten::" #name, "out"),                              \
                 find("aten::" #name "_", overload)};                      \
    aten.impl(#name "." overload, TORCH_FN(Impl::functional));             \
    aten.impl(#name ".out", TORCH_FN(Impl::out));                          \
    aten.impl(#name "_." overload, TORCH_FN(Impl::inplace));               \
    registered.insert(registered.end(), {#name "." overload, #name ".out", \
                                         #name "_." overload});            \
  }
  TORCH_BACKEND_BINARY_OPS(TORCH_BACKEND_REGISTER_BINARY)
#undef TORCH_BACKEND_REGISTER_BINARY
#define TORCH_BACKEND_REGISTER_UNARY(name, Meta)                             \
  if (UnaryKernel kernel = unary_kernel(#name)) {                            \
    using Impl = Unary<at::meta::Meta, &name##_op>;                          \
    name##_op = {kernel, find("aten::" #name, ""),                           \
                 find("aten::" #name, "out"), find("aten::" #name "_", "")}; \
    aten.impl(#name, TORCH_FN(Impl::functional));                            \
    aten.impl(#name ".out", TORCH_FN(Impl::out));                            \
    aten.impl(#name "_", TORCH_FN(Impl::inplace));                           \
    registered.insert(registered.end(), {#name, #name ".out", #name "_"});   \
  }
  TORCH_BACKEND_UNARY_OPS(TORCH_BACKEND_REGISTER_UNARY)
#undef TORCH_BACKEND_REGISTER_UNARY
  return registered;
}

std::vector<OpTableRow> op_table() {
  std::vector<OpTableRow> rows;
#define TORCH_BACKEND_BINARY_ROWS(name, overload, Meta, Variant)            \
  for (const char* op :                                                     \
       {#name "." overload, #name ".out", #name "_." overload}) {           \
    rows.push_back({op, "binary", #name, binary_kernel(#name) != nullptr}); \
  }
  TORCH_BACKEND_BINARY_OPS(TORCH_BACKEND_BINARY_ROWS)
#undef TORCH_BACKEND_BINARY_ROWS
#define TORCH_BACKEND_UNARY_ROWS(name, Meta)                              \
  for (const char* op : {#name, #name ".out", #name "_"}) {               \
    rows.push_back({op, "unary", #name, unary_kernel(#name) != nullptr}); \
  }
  TORCH_BACKEND_UNARY_OPS(TORCH_BACKEND_UNARY_ROWS)
#undef TORCH_BACKEND_UNARY_ROWS
  return rows;
}

}  // namespace torch_backend
