// Copies on the device: copy_on_device (for _copy_from, so clone, contiguous,
// .to(dtype) and strided transfers run on the device) and cat, which ATen's
// structured meta class sizes and whose pieces are copies into slices.
#include "Copy.h"

#include <ATen/TensorIterator.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/cat_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"
#include "Structured.h"

namespace torch_backend {

bool has_copy_kernel() { return elementwise_kernel("copy") != nullptr; }

bool copy_on_device(const at::Tensor& dst, const at::Tensor& src) {
  ElementwiseKernel kernel = elementwise_kernel("copy");
  if (kernel == nullptr || src.is_conj() || src.is_neg() || dst.is_conj() ||
      dst.is_neg() || !kernel_dtypes(dst, src)) {
    return false;
  }
  if (dst.numel() == 0) {
    return true;
  }
  c10::DeviceGuard guard(dst.device());
  // As ATen's copy_ builds it; its caller has checked overlap and sizes.
  auto iter = at::TensorIteratorConfig()
                  .add_output(dst)
                  .add_const_input(src)
                  .resize_outputs(false)
                  .check_all_same_dtype(false)
                  .check_all_same_device(false)
                  .build();
  ElementwiseCall call;
  call.out = view_of(iter, 0);
  call.inputs[0] = view_of(iter, 1);
  call.num_inputs = 1;
  return kernel_ran(kernel(kernel_context(dst.device()), call));
}

namespace {

using at::Tensor;

// Each input lands in its slice of out, through copy_ (and so the kernel).
void copy_pieces(const at::ITensorListRef& tensors, int64_t dim,
                 const Tensor& out) {
  const auto materialized = tensors.materialize();
  const int64_t wrapped = at::legacy_cat_wrap_dim(dim, materialized);
  int64_t offset = 0;
  for (const Tensor& piece : materialized) {
    if (piece.dim() == 1 && piece.numel() == 0) {
      continue;  // legacy empty tensors take no part
    }
    const int64_t size = piece.size(wrapped);
    out.narrow(wrapped, offset, size).copy_(piece);
    offset += size;
  }
}

Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  Functional<at::meta::structured_cat> meta;
  meta.meta(tensors, dim);
  copy_pieces(tensors, dim, meta.outputs_[0]);
  return meta.outputs_[0];
}

Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, Tensor& out) {
  Out<at::meta::structured_cat> meta(out);
  meta.meta(tensors, dim);
  copy_pieces(tensors, dim, out);
  return out;
}

}  // namespace

std::vector<std::string> register_copy_kernels(torch::Library& aten) {
  if (elementwise_kernel("copy") == nullptr) {
    return {};
  }
  register_kernel(aten, "cat", TORCH_FN(cat));
  register_kernel(aten, "cat.out", TORCH_FN(cat_out));
  return {"cat", "cat.out"};
}

}  // namespace torch_backend
