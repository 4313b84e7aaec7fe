// Internal: the three ways an ATen kernel over a structured meta class gets
// its outputs, as PyTorch's generated in-tree registrations provide them:
// allocate (functional), resize the caller's out= tensors (out), or check the
// self tensor (in-place). Meta is torchgen's at::meta::structured_* class (a
// TensorIterator for element-wise ops, a plain MetaBase for mm or softmax)
// or one of ours with the same shape.
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <array>
#include <type_traits>

#include "../TorchCompat.h"

namespace torch_backend {

// Records the output in the meta class too, where it is a TensorIterator.
template <class Meta>
void forward_output(Meta& meta, int64_t index, at::IntArrayRef sizes,
                    at::IntArrayRef strides, at::TensorOptions options) {
  if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>) {
    // Not before the iterator is being built (WhereMeta sizes its output
    // first).
    if (index < meta.ntensors()) {
      compat::base_output_hook<Meta>(meta, index, sizes, strides, options);
    }
  }
}

template <class Meta>
struct Functional final : compat::OutputHook<Meta> {
  void provide_output(int64_t index, at::IntArrayRef sizes,
                      at::IntArrayRef strides,
                      at::TensorOptions options) override {
    // A meta function that sizes its output before building an iterator
    // (WhereMeta) is asked again by the iterator: keep the first.
    if (!outputs_[index].defined() || outputs_[index].sizes() != sizes) {
      outputs_[index] = strides.empty()
                            ? at::empty(sizes, options)
                            : at::empty_strided(sizes, strides, options);
    }
    forward_output<Meta>(*this, index, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t index) override {
    return outputs_[index];
  }
  std::array<at::Tensor, 2> outputs_;
};

template <class Meta>
struct Out final : compat::OutputHook<Meta> {
  explicit Out(const at::Tensor& out) : outs_{&out, nullptr} {}
  Out(const at::Tensor& first, const at::Tensor& second)
      : outs_{&first, &second} {}
  void provide_output(int64_t index, at::IntArrayRef sizes,
                      at::IntArrayRef strides,
                      at::TensorOptions options) override {
    const at::Tensor& out = *outs_[index];
    TORCH_CHECK(options.dtype() == out.dtype(),
                "Expected out tensor to have dtype ", options.dtype(),
                ", but got ", out.dtype(), " instead");
    TORCH_CHECK(options.device() == out.device(),
                "Expected out tensor to have device ", options.device(),
                ", but got ", out.device(), " instead");
    // Only restride what was resized; otherwise the out tensor's own
    // strides stand (as in PyTorch's generated out= wrappers).
    if (at::native::resize_output(out, sizes) && !strides.empty()) {
      out.as_strided_(sizes, strides);
    }
    forward_output<Meta>(*this, index, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t index) override {
    return *outs_[index];
  }
  std::array<const at::Tensor*, 2> outs_;
};

template <class Meta>
struct InPlace final : compat::OutputHook<Meta> {
  explicit InPlace(const at::Tensor& self) : self_(self) {}
  void provide_output(int64_t index, at::IntArrayRef sizes,
                      at::IntArrayRef strides,
                      at::TensorOptions options) override {
    TORCH_CHECK(options.dtype() == self_.dtype(),
                "Bad in-place call: input tensor dtype ", self_.dtype(),
                " and output tensor dtype ", options.dtype(), " should match");
    TORCH_CHECK(sizes == self_.sizes(), "Bad in-place call: input tensor size ",
                self_.sizes(), " and output tensor size ", sizes,
                " should match");
    forward_output<Meta>(*this, index, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t) override { return self_; }
  const at::Tensor& self_;
};

}  // namespace torch_backend
