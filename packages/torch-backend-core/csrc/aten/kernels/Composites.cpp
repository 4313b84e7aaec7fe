// Ops without a kernel family of their own that core composes from the
// backend's kernels, so that they stay on the device (as CUDA runs each as a
// few kernels) instead of taking the copying fallback with their whole
// inputs: `_safe_softmax` (every attention with dropout on PyTorch's math
// path runs it over the scores), `mse_loss`, and `tril`/`triu` (the causal
// mask of that path, built on every call). Each is registered only where
// the backend has every kernel it uses; the results are those of ATen's own
// definitions.
#include <ATen/core/Reduction.h>
#include <ATen/ops/_softmax.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/lt.h>
#include <ATen/ops/masked_fill.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <torch/library.h>

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
  return registered;
}

}  // namespace torch_backend
