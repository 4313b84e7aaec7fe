// ATen kernels for indexing along one dimension over the backend's indexing
// kernels: index_select (and so embedding), index_add (and so the dense
// embedding backward), gather and scatter_add (gather's backward). Indices are
// checked against the size first (IndexError as on the CPU: one synchronising
// check).
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gather_meta.h>
#include <ATen/ops/index_add_meta.h>
#include <ATen/ops/scatter_add_meta.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"
#include "Structured.h"

namespace torch_backend {
namespace {

using at::Tensor;

std::optional<c10::OperatorHandle> index_select_op, index_select_out_op,
    index_add_op, index_add_out_op, index_add_inplace_op, embedding_backward_op;

// 1-D Int64 indices on `device`, in range for a dimension of `size`.
Tensor checked_indices(const Tensor& index, int64_t size,
                       const c10::Device& device, const char* op) {
  TORCH_CHECK_INDEX(index.dim() <= 1, op,
                    "(): Index is supposed to be a vector");
  TORCH_CHECK(
      index.scalar_type() == at::kLong || index.scalar_type() == at::kInt, op,
      "(): Expected dtype int32 or int64 for index");
  Tensor indices = index.reshape(-1).to(device, at::kLong);
  TORCH_CHECK_INDEX(!first_out_of_range(indices, size, std::nullopt),
                    "index out of range in self");
  return indices;
}

// False when the backend declined (dtype) or lacks the kernel.
bool run_index_select(const Tensor& out, const Tensor& self, int64_t dim,
                      const Tensor& index) {
  IndexKernel kernel = index_kernel("index_select");
  if (kernel == nullptr || !kernel_dtypes(self) ||
      out.scalar_type() != self.scalar_type()) {
    return false;
  }
  c10::DeviceGuard guard(self.device());
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  const Tensor self_1d = at_least_1d(self);
  const Tensor indices = checked_indices(index, self_1d.size(wrapped),
                                         self.device(), "index_select");
  std::vector<int64_t> sizes = self_1d.sizes().vec();
  sizes[wrapped] = indices.numel();
  at::native::resize_output(
      out, self.dim() == 0 ? at::IntArrayRef{} : at::IntArrayRef(sizes));
  if (out.numel() == 0) {
    return true;
  }
  IndexCall call;
  call.out = view_of(at_least_1d(out));
  call.self = view_of(self_1d);
  call.index = view_of(indices);
  call.dim = static_cast<int32_t>(wrapped);
  return kernel_ran(kernel(kernel_context(self.device()), call));
}

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  Tensor out = at::empty({0}, self.options());
  if (!run_index_select(out, self, dim, index)) {
    torch::jit::Stack stack{self, dim, index};
    fall_back(*index_select_op, stack);
    return stack.back().toTensor();
  }
  return out;
}

Tensor& index_select_out(const Tensor& self, int64_t dim, const Tensor& index,
                         Tensor& out) {
  TORCH_CHECK(out.scalar_type() == self.scalar_type(),
              "index_select(): self and result must have the same scalar "
              "type");
  if (!run_index_select(out, self, dim, index)) {
    torch::jit::Stack stack{self, dim, index, out};
    fall_back(*index_select_out_op, stack);
  }
  return out;
}

// out (already holding self) += alpha * source scattered along dim.
bool run_index_add(const Tensor& out, int64_t dim, const Tensor& index,
                   const Tensor& source, const c10::Scalar& alpha) {
  IndexKernel kernel = index_kernel("index_add");
  if (kernel == nullptr || !kernel_dtypes(out, source) ||
      source.scalar_type() != out.scalar_type()) {
    return false;
  }
  if (index.numel() == 0) {
    return true;
  }
  c10::DeviceGuard guard(out.device());
  const int64_t wrapped = at::maybe_wrap_dim(dim, out.dim());
  const Tensor out_1d = at_least_1d(out);
  const Tensor indices =
      checked_indices(index, out_1d.size(wrapped), out.device(), "index_add");
  IndexCall call;
  call.out = view_of(out_1d);
  call.index = view_of(indices);
  call.source = view_of(at_least_1d(source));
  call.dim = static_cast<int32_t>(wrapped);
  call.alpha = scalar_value(alpha, out.scalar_type());
  return kernel_ran(kernel(kernel_context(out.device()), call));
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index,
                 const Tensor& source, const c10::Scalar& alpha) {
  Functional<at::meta::structured_index_add> meta;
  meta.meta(self, dim, index, source, alpha);
  const Tensor& out = meta.outputs_[0];
  out.copy_(self);
  if (!run_index_add(out, dim, index, source, alpha)) {
    torch::jit::Stack stack{self, dim, index, source, alpha};
    fall_back(*index_add_op, stack);
    return stack.back().toTensor();
  }
  return out;
}

Tensor& index_add_out(const Tensor& self, int64_t dim, const Tensor& index,
                      const Tensor& source, const c10::Scalar& alpha,
                      Tensor& out) {
  Out<at::meta::structured_index_add> meta(out);
  meta.meta(self, dim, index, source, alpha);
  if (!out.is_same(self)) {
    out.copy_(self);
  }
  if (!run_index_add(out, dim, index, source, alpha)) {
    torch::jit::Stack stack{self, dim, index, source, alpha, out};
    fall_back(*index_add_out_op, stack);
  }
  return out;
}

Tensor& index_add_(Tensor& self, int64_t dim, const Tensor& index,
                   const Tensor& source, const c10::Scalar& alpha) {
  InPlace<at::meta::structured_index_add> meta(self);
  meta.meta(self, dim, index, source, alpha);
  if (!run_index_add(self, dim, index, source, alpha)) {
    torch::jit::Stack stack{self, dim, index, source, alpha};
    fall_back(*index_add_inplace_op, stack);
  }
  return self;
}

// The gradient of embedding: rows of grad_output summed into the rows their
// indices name; the padding row gets none.
Tensor embedding_dense_backward(const Tensor& grad_output,
                                const Tensor& indices, int64_t num_weights,
                                int64_t padding_idx, bool scale_grad_by_freq) {
  const int64_t width = grad_output.size(-1);
  Tensor grad_weight = at::zeros({num_weights, width}, grad_output.options());
  if (scale_grad_by_freq ||
      !run_index_add(grad_weight, 0, indices.reshape(-1),
                     grad_output.reshape({-1, width}), 1)) {
    torch::jit::Stack stack{grad_output, indices, num_weights, padding_idx,
                            scale_grad_by_freq};
    fall_back(*embedding_backward_op, stack);
    return stack.back().toTensor();
  }
  if (padding_idx >= 0 && padding_idx < num_weights) {
    grad_weight.select(0, padding_idx).zero_();
  }
  return grad_weight;
}

// gather and scatter_add: an index of self's rank, checked against the size
// of `dim` in `bounded` (IndexError with the CPU's message).
Tensor checked_scatter_index(const Tensor& index, const Tensor& bounded,
                             int64_t dim) {
  const int64_t size = bounded.dim() == 0 ? 1 : bounded.size(dim);
  if (auto bad = first_out_of_range(index, size, std::nullopt)) {
    TORCH_CHECK_INDEX(false, "index ", *bad, " is out of bounds for dimension ",
                      dim, " with size ", size);
  }
  return index;
}

bool run_gather(const Tensor& out, const Tensor& self, int64_t dim,
                const Tensor& index) {
  IndexKernel kernel = index_kernel("gather");
  if (kernel == nullptr || !kernel_dtypes(self) ||
      out.scalar_type() != self.scalar_type()) {
    return false;
  }
  if (index.numel() == 0) {
    return true;
  }
  c10::DeviceGuard guard(self.device());
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  checked_scatter_index(index, self, wrapped);
  IndexCall call;
  call.out = view_of(at_least_1d(out));
  call.self = view_of(at_least_1d(self));
  call.index = view_of(at_least_1d(index));
  call.dim = static_cast<int32_t>(wrapped);
  return kernel_ran(kernel(kernel_context(self.device()), call));
}

bool run_scatter_add(const Tensor& out, int64_t dim, const Tensor& index,
                     const Tensor& src) {
  IndexKernel kernel = index_kernel("scatter_add");
  if (kernel == nullptr || !kernel_dtypes(out, src) ||
      src.scalar_type() != out.scalar_type()) {
    return false;
  }
  if (index.numel() == 0) {
    return true;
  }
  c10::DeviceGuard guard(out.device());
  const int64_t wrapped = at::maybe_wrap_dim(dim, out.dim());
  checked_scatter_index(index, out, wrapped);
  IndexCall call;
  call.out = view_of(at_least_1d(out));
  call.index = view_of(at_least_1d(index));
  call.source = view_of(at_least_1d(src));
  call.dim = static_cast<int32_t>(wrapped);
  call.alpha = scalar_value(1, out.scalar_type());
  return kernel_ran(kernel(kernel_context(out.device()), call));
}

std::optional<c10::OperatorHandle> gather_op, gather_out_op, scatter_add_op,
    scatter_add_out_op, scatter_add_inplace_op;

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index,
              bool sparse_grad) {
  Functional<at::meta::structured_gather> meta;
  meta.meta(self, dim, index, sparse_grad);
  if (run_gather(meta.outputs_[0], self, dim, index)) {
    return meta.outputs_[0];
  }
  torch::jit::Stack stack{self, dim, index, sparse_grad};
  fall_back(*gather_op, stack);
  return stack.back().toTensor();
}

Tensor& gather_out(const Tensor& self, int64_t dim, const Tensor& index,
                   bool sparse_grad, Tensor& out) {
  Out<at::meta::structured_gather> meta(out);
  meta.meta(self, dim, index, sparse_grad);
  if (!run_gather(out, self, dim, index)) {
    torch::jit::Stack stack{self, dim, index, sparse_grad, out};
    fall_back(*gather_out_op, stack);
  }
  return out;
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index,
                   const Tensor& src) {
  Functional<at::meta::structured_scatter_add> meta;
  meta.meta(self, dim, index, src);
  const Tensor& out = meta.outputs_[0];
  out.copy_(self);
  if (run_scatter_add(out, dim, index, src)) {
    return out;
  }
  torch::jit::Stack stack{self, dim, index, src};
  fall_back(*scatter_add_op, stack);
  return stack.back().toTensor();
}

Tensor& scatter_add_out(const Tensor& self, int64_t dim, const Tensor& index,
                        const Tensor& src, Tensor& out) {
  Out<at::meta::structured_scatter_add> meta(out);
  meta.meta(self, dim, index, src);
  if (!out.is_same(self)) {
    out.copy_(self);
  }
  if (!run_scatter_add(out, dim, index, src)) {
    torch::jit::Stack stack{self, dim, index, src, out};
    fall_back(*scatter_add_out_op, stack);
  }
  return out;
}

Tensor& scatter_add_(Tensor& self, int64_t dim, const Tensor& index,
                     const Tensor& src) {
  InPlace<at::meta::structured_scatter_add> meta(self);
  meta.meta(self, dim, index, src);
  if (!run_scatter_add(self, dim, index, src)) {
    torch::jit::Stack stack{self, dim, index, src};
    fall_back(*scatter_add_inplace_op, stack);
  }
  return self;
}

}  // namespace

std::vector<std::string> register_index_kernels(torch::Library& aten) {
  std::vector<std::string> registered;
  if (index_kernel("index_select") != nullptr) {
    index_select_op = find_op("index_select");
    index_select_out_op = find_op("index_select.out");
    register_kernel(aten, "index_select", TORCH_FN(index_select));
    register_kernel(aten, "index_select.out", TORCH_FN(index_select_out));
    registered.insert(registered.end(), {"index_select", "index_select.out"});
  }
  if (index_kernel("index_add") != nullptr) {
    index_add_op = find_op("index_add");
    index_add_out_op = find_op("index_add.out");
    index_add_inplace_op = find_op("index_add_");
    embedding_backward_op = find_op("embedding_dense_backward");
    register_kernel(aten, "index_add", TORCH_FN(index_add));
    register_kernel(aten, "index_add.out", TORCH_FN(index_add_out));
    register_kernel(aten, "index_add_", TORCH_FN(index_add_));
    register_kernel(aten, "embedding_dense_backward",
                    TORCH_FN(embedding_dense_backward));
    registered.insert(registered.end(),
                      {"index_add", "index_add.out", "index_add_",
                       "embedding_dense_backward"});
  }
  if (index_kernel("gather") != nullptr) {
    gather_op = find_op("gather");
    gather_out_op = find_op("gather.out");
    register_kernel(aten, "gather", TORCH_FN(gather));
    register_kernel(aten, "gather.out", TORCH_FN(gather_out));
    registered.insert(registered.end(), {"gather", "gather.out"});
  }
  if (index_kernel("scatter_add") != nullptr) {
    scatter_add_op = find_op("scatter_add");
    scatter_add_out_op = find_op("scatter_add.out");
    scatter_add_inplace_op = find_op("scatter_add_");
    register_kernel(aten, "scatter_add", TORCH_FN(scatter_add));
    register_kernel(aten, "scatter_add.out", TORCH_FN(scatter_add_out));
    register_kernel(aten, "scatter_add_", TORCH_FN(scatter_add_));
    registered.insert(registered.end(),
                      {"scatter_add", "scatter_add.out", "scatter_add_"});
  }
  return registered;
}

}  // namespace torch_backend
