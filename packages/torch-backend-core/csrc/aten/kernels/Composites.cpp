// Ops without a kernel family of their own that core composes from the
// backend's kernels, so that they stay on the device (as CUDA runs each as a
// few kernels) instead of taking the copying fallback with their whole
// inputs: `_safe_softmax` (every attention with dropout on PyTorch's math
// path runs it over the scores), `mse_loss`, and `tril`/`triu` (the causal
// mask of that path, built on every call), and `pow.Scalar` (a number raised
// to a tensor: Adam's bias corrections with capturable=True, on every step)
// and `lerp` by a number (Adam's and AdamW's first moment, every step). Each is
// registered only where the backend has every kernel it uses; the results are
// those of ATen's own definitions.
#include <ATen/ScalarOps.h>
#include <ATen/core/Reduction.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_softmax.h>
#include <ATen/ops/add.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/lt.h>
#include <ATen/ops/masked_fill.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <torch/library.h>

#include <cmath>
#include <limits>

#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"

namespace torch_backend {
namespace {

using at::Tensor;

// softmax along dim, but 0 (not softmax's NaN) across a row that is all -inf
// (a query that may attend to nothing), as ATen's _safe_softmax: such a row
// is one whose maximum is -inf.
Tensor safe_softmax(const Tensor& self, int64_t dim,
                    std::optional<at::ScalarType> dtype) {
  const Tensor input = dtype ? self.to(*dtype) : self;
  Tensor out = at::_softmax(input, dim, /*half_to_float=*/false);
  if (input.dim() == 0 || input.numel() == 0) {
    return out;
  }
  const Tensor all_masked = at::amax(input, {dim}, /*keepdim=*/true)
                                .eq(-std::numeric_limits<double>::infinity());
  return out.masked_fill_(all_masked, 0);
}

// (self - target)^2, reduced as `reduction` says.
Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  const Tensor diff = at::sub(self, target);
  const Tensor loss = at::mul(diff, diff);
  switch (reduction) {
    case at::Reduction::Mean:
      return loss.mean();
    case at::Reduction::Sum:
      return loss.sum();
    default:
      return loss;
  }
}

// 2 (self - target) grad_output, divided by the element count for Mean.
Tensor mse_loss_backward(const Tensor& grad_output, const Tensor& self,
                         const Tensor& target, int64_t reduction) {
  const double norm = reduction == at::Reduction::Mean
                          ? 2.0 / static_cast<double>(self.numel())
                          : 2.0;
  return at::mul(at::sub(self, target).mul_(norm), grad_output);
}

// Where a triangle keeps nothing: column - row > k above the k-th diagonal
// (tril, kLower), < k below it (triu), over the last two dimensions.
template <bool kLower>
Tensor outside_triangle(const Tensor& self, int64_t k) {
  TORCH_CHECK(self.dim() >= 2, kLower ? "tril" : "triu",
              ": input tensor must have at least 2 dimensions");
  const auto options = self.options().dtype(at::kLong);
  const Tensor offset =
      at::sub(at::arange(self.size(-1), options),
              at::arange(self.size(-2), options).unsqueeze(1));
  return kLower ? offset.gt(k) : offset.lt(k);
}

template <bool kLower>
Tensor triangle(const Tensor& self, int64_t k) {
  return self.clone().masked_fill_(outside_triangle<kLower>(self, k), 0);
}
template <bool kLower>
Tensor& triangle_(Tensor& self, int64_t k) {
  return self.masked_fill_(outside_triangle<kLower>(self, k), 0);
}

bool has_elementwise(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (elementwise_kernel(name) == nullptr) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool safe_softmax_composable() {
  return softmax_kernel("softmax") != nullptr &&
         reduction_kernel("amax") != nullptr &&
         has_elementwise({"eq", "masked_fill", "copy"});
}

bool mse_loss_composable() {
  return reduction_kernel("mean") != nullptr &&
         reduction_kernel("sum") != nullptr && has_elementwise({"sub", "mul"});
}

bool triangle_composable() {
  return has_elementwise({"arange", "sub", "gt", "lt", "masked_fill", "copy"});
}

// ATen's lerp by a number: start + weight * (end - start) for |weight| < 0.5,
// else end - (end - start) * (1 - weight), the form that is exact at 1.
Tensor& lerp_scalar_out(const Tensor& self, const Tensor& end,
                        const c10::Scalar& weight, Tensor& out) {
  TORCH_CHECK(self.scalar_type() == end.scalar_type(), "expected dtype ",
              self.scalar_type(), " for `end` but got dtype ",
              end.scalar_type());
  const Tensor difference = at::sub(end, self);
  const double w = weight.toDouble();
  if (std::abs(w) < 0.5) {
    return at::add_out(out, self, difference, weight);
  }
  return at::sub_out(out, end, difference, 1.0 - w);
}

Tensor lerp_scalar(const Tensor& self, const Tensor& end,
                   const c10::Scalar& weight) {
  Tensor out = at::empty({0}, self.options());
  return lerp_scalar_out(self, end, weight, out);
}

Tensor& lerp_scalar_(Tensor& self, const Tensor& end,
                     const c10::Scalar& weight) {
  return lerp_scalar_out(self, end, weight, self);
}

bool lerp_composable() { return has_elementwise({"add", "sub"}); }

// base ** exponent as ATen computes it: the tensor power with the base as a
// wrapped number (the same type promotion), on the backend's pow kernel.
Tensor pow_scalar_base(const c10::Scalar& base, const Tensor& exponent) {
  return at::pow(at::native::wrapped_scalar_tensor(base), exponent);
}

Tensor& pow_scalar_base_out(const c10::Scalar& base, const Tensor& exponent,
                            Tensor& out) {
  return at::pow_out(out, at::native::wrapped_scalar_tensor(base), exponent);
}

bool pow_scalar_base_composable() { return has_elementwise({"pow"}); }

std::vector<std::string> register_composite_kernels(torch::Library& aten) {
  std::vector<std::string> registered;
  if (safe_softmax_composable()) {
    impl_if_listed(aten, registered, "_safe_softmax", TORCH_FN(safe_softmax));
  }
  if (mse_loss_composable()) {
    impl_if_listed(aten, registered, "mse_loss", TORCH_FN(mse_loss));
    impl_if_listed(aten, registered, "mse_loss_backward",
                   TORCH_FN(mse_loss_backward));
  }
  if (triangle_composable()) {
    impl_if_listed(aten, registered, "tril", TORCH_FN(triangle<true>));
    impl_if_listed(aten, registered, "triu", TORCH_FN(triangle<false>));
    impl_if_listed(aten, registered, "tril_", TORCH_FN(triangle_<true>));
    impl_if_listed(aten, registered, "triu_", TORCH_FN(triangle_<false>));
  }
  if (lerp_composable() && elementwise_kernel("lerp_scalar") == nullptr) {
    impl_if_listed(aten, registered, "lerp.Scalar", TORCH_FN(lerp_scalar));
    impl_if_listed(aten, registered, "lerp.Scalar_out",
                   TORCH_FN(lerp_scalar_out));
    impl_if_listed(aten, registered, "lerp_.Scalar", TORCH_FN(lerp_scalar_));
  }
  if (pow_scalar_base_composable()) {
    impl_if_listed(aten, registered, "pow.Scalar", TORCH_FN(pow_scalar_base));
    impl_if_listed(aten, registered, "pow.Scalar_out",
                   TORCH_FN(pow_scalar_base_out));
  }
  return registered;
}

}  // namespace torch_backend
