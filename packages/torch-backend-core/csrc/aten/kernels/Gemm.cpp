// ATen kernels for matrix multiplies (mm, addmm, bmm, baddbmm and so matmul,
// linear and their backward, which PyTorch composes from them) over the
// backend's GEMM kernel. The structured meta classes check shapes and dtypes
// and size the result; the kernel gets 3-D strided views, so transposed and
// broadcast operands reach it without copies.
#include <ATen/Context.h>
#include <ATen/ExpandUtils.h>
#include <ATen/ops/addmm_meta.h>
#include <ATen/ops/baddbmm_meta.h>
#include <ATen/ops/bmm_meta.h>
#include <ATen/ops/mm_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"
#include "Structured.h"

namespace torch_backend {
namespace {

using at::Tensor;

// A matrix's view as a batch of one (what unsqueeze(0) gives, without an op
// call per operand); a batch's unchanged.
TensorView as_batch(TensorView view) {
  if (view.dim == 2) {
    view.dim = 3;
    view.sizes[2] = view.sizes[1];
    view.strides[2] = view.strides[1];
    view.sizes[1] = view.sizes[0];
    view.strides[1] = view.strides[0];
    view.sizes[0] = 1;
    view.strides[0] = view.sizes[1] * view.strides[1];
  }
  return view;
}

TensorView batched(const Tensor& tensor) { return as_batch(view_of(tensor)); }

// addmm's bias broadcast to out's shape (expand's strides, without the op).
TensorView broadcast_to(const Tensor& bias, const Tensor& out) {
  TensorView view = view_of(bias);
  const auto geometry = at::inferExpandGeometry_dimvector(
      bias.sizes(), bias.strides(), out.sizes());
  view.dim = static_cast<int32_t>(geometry.sizes.size());
  for (int d = 0; d < view.dim; ++d) {
    view.sizes[d] = geometry.sizes[d];
    view.strides[d] = geometry.strides[d];
  }
  return as_batch(view);
}

// out = alpha * (a @ b) + beta * bias; false when the backend declined.
bool run_gemm(const Tensor& out, const Tensor& a, const Tensor& b,
              const Tensor* bias, const c10::Scalar& beta,
              const c10::Scalar& alpha) {
  GemmKernel kernel = gemm_kernel();
  if (!kernel_dtypes(out, a, b) || !at::isFloatingType(out.scalar_type()) ||
      a.scalar_type() != out.scalar_type()) {
    return false;
  }
  if (out.numel() == 0) {
    return true;
  }
  c10::DeviceGuard guard(out.device());
  GemmCall call;
  call.out = batched(out);
  call.a = batched(a);
  call.b = batched(b);
  call.alpha = alpha.to<double>();
  call.beta = bias != nullptr ? beta.to<double>() : 0.0;
  // PyTorch's one switch for reduced-precision float32 products (its check
  // raises, as on CUDA, when the legacy and new precision APIs disagree).
  call.allow_reduced_precision = at::globalContext().allowTF32CuBLAS();
  if (call.beta != 0) {
    if (!kernel_dtypes(*bias) || bias->scalar_type() != out.scalar_type()) {
      return false;
    }
    call.c = broadcast_to(*bias, out);
  }
  return kernel_ran(kernel(kernel_context(out.device()), call));
}

// Each op's operands: (a, b, bias or nullptr, beta, alpha) from its args.
struct MmOperands {
  static bool run(const Tensor& out, const Tensor& self, const Tensor& mat2) {
    return run_gemm(out, self, mat2, nullptr, 0, 1);
  }
};
struct AddmmOperands {
  static bool run(const Tensor& out, const Tensor& self, const Tensor& mat1,
                  const Tensor& mat2, const c10::Scalar& beta,
                  const c10::Scalar& alpha) {
    return run_gemm(out, mat1, mat2, &self, beta, alpha);
  }
};

struct GemmOp {
  std::optional<c10::OperatorHandle> functional, out, inplace;
};

template <class Meta, class Operands, class Signature>
struct GemmWrappers;

template <class Meta, class Operands, class... Rest>
struct GemmWrappers<Meta, Operands, void (Meta::*)(const Tensor&, Rest...)> {
  template <const GemmOp* Op>
  static Tensor functional(const Tensor& self, Rest... rest) {
    Functional<Meta> meta;
    meta.meta(self, rest...);
    if (Operands::run(meta.outputs_[0], self, rest...)) {
      return meta.outputs_[0];
    }
    torch::jit::Stack stack{self, boxed(rest)...};
    fall_back(*Op->functional, stack);
    return stack.back().toTensor();
  }

  template <const GemmOp* Op>
  static Tensor& out(const Tensor& self, Rest... rest, Tensor& out) {
    Out<Meta> meta(out);
    meta.meta(self, rest...);
    if (!Operands::run(out, self, rest...)) {
      torch::jit::Stack stack{self, boxed(rest)..., out};
      fall_back(*Op->out, stack);
    }
    return out;
  }

  template <const GemmOp* Op>
  static Tensor& inplace(Tensor& self, Rest... rest) {
    InPlace<Meta> meta(self);
    meta.meta(self, rest...);
    if (!Operands::run(self, self, rest...)) {
      torch::jit::Stack stack{self, boxed(rest)...};
      fall_back(*Op->inplace, stack);
    }
    return self;
  }
};

#define TORCH_BACKEND_GEMM_STATE(id, Meta, Operands, functional, out, inplace) \
  GemmOp id##_op;
TORCH_BACKEND_GEMM_OPS(TORCH_BACKEND_GEMM_STATE)
#undef TORCH_BACKEND_GEMM_STATE

}  // namespace

std::vector<std::string> register_gemm_kernels(torch::Library& aten) {
  std::vector<std::string> registered;
  if (gemm_kernel() == nullptr) {
    return registered;
  }
  const auto add = [&](const char* name, auto fn) {
    impl_if_listed(aten, registered, name, fn);
  };
  const auto handle = &find_optional_op;
#define TORCH_BACKEND_REGISTER_GEMM(id, Meta, Operands, fn_name, out_name, \
                                    inplace_name)                          \
  {                                                                        \
    using Impl = GemmWrappers<Meta, Operands, decltype(&Meta::meta)>;      \
    id##_op = {handle(fn_name), handle(out_name), handle(inplace_name)};   \
    add(fn_name, TORCH_FN(Impl::template functional<&id##_op>));           \
    add(out_name, TORCH_FN(Impl::template out<&id##_op>));                 \
    add(inplace_name, TORCH_FN(Impl::template inplace<&id##_op>));         \
  }
  TORCH_BACKEND_GEMM_OPS(TORCH_BACKEND_REGISTER_GEMM)
#undef TORCH_BACKEND_REGISTER_GEMM
  return registered;
}

}  // namespace torch_backend
