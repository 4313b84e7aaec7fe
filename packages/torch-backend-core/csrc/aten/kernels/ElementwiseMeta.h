// Internal: meta classes, shaped like torchgen's structured ones, for the
// element-wise ops PyTorch did not port to structured kernels (where, relu,
// fill_) or whose meta arguments differ from the op's (clamp). Each builds
// the TensorIterator that op's CPU kernel builds, with the same checks.
#pragma once

#include <ATen/ExpandUtils.h>
#include <ATen/TensorIterator.h>
#include <ATen/ops/clamp_meta.h>
#include <ATen/ops/result_type.h>

#include <optional>

#include "../TorchCompat.h"

namespace torch_backend {

struct WhereMeta : at::TensorIteratorBase {
  void meta(const at::Tensor& condition, const at::Tensor& self,
            const at::Tensor& other) {
    TORCH_CHECK(condition.scalar_type() == at::kBool,
                "where expected condition to be a boolean tensor, but got a "
                "tensor with dtype ",
                condition.scalar_type());
    const at::ScalarType result = at::result_type(self, other);
    // A 0-dim CPU operand joins the device's (as the CPU kernel allows).
    const c10::Device device = condition.device();
    for (const at::Tensor* operand : {&self, &other}) {
      TORCH_CHECK(operand->device() == device ||
                      (operand->is_cpu() && operand->dim() == 0),
                  "Expected all tensors to be on the same device, but found "
                  "at least two devices, ",
                  device, " and ", operand->device(), "!");
    }
    self_ = self.to(device, result);
    other_ = other.to(device, result);
    condition_ = condition.to(device);
    // The iterator needs a defined output when its inputs' dtypes differ.
    if (!maybe_get_output().defined()) {
      compat::request_output(
          *this, 0,
          at::infer_size(at::infer_size(condition.sizes(), self.sizes()),
                         other.sizes()),
          {}, self_.options());
    }
    build(at::TensorIteratorConfig()
              .check_all_same_dtype(false)
              .add_output(maybe_get_output())
              .add_const_input(condition_)
              .add_const_input(self_)
              .add_const_input(other_));
  }
  at::Tensor condition_, self_, other_;
};

struct ReluMeta : at::TensorIteratorBase {
  void meta(const at::Tensor& self) {
    TORCH_CHECK(self.scalar_type() != at::kBool,
                "Boolean inputs not supported for relu");
    build_borrowing_unary_op(maybe_get_output(), self);
  }
};

// clamp's meta takes OptionalScalarRef; the op takes optional<Scalar>.
struct ClampMeta : at::meta::structured_clamp {
  void meta(const at::Tensor& self, const std::optional<at::Scalar>& min,
            const std::optional<at::Scalar>& max) {
    structured_clamp::meta(
        self, min ? at::OptionalScalarRef(&*min) : at::OptionalScalarRef(),
        max ? at::OptionalScalarRef(&*max) : at::OptionalScalarRef());
  }
};

// masked_fill_'s CPU iterator: out (self, also read) and the mask.
struct MaskedFillMeta : at::TensorIteratorBase {
  void meta(const at::Tensor& self, const at::Tensor& mask,
            const at::Scalar& /*value*/) {
    TORCH_CHECK(mask.scalar_type() == at::kBool,
                "masked_fill_ only supports boolean masks, but got mask "
                "with dtype ",
                mask.scalar_type());
    TORCH_CHECK(self.device() == mask.device() || mask.dim() == 0,
                "masked_fill_: Expected inputs to be on same device");
    mask_ = mask.to(self.device());
    build(at::TensorIteratorConfig()
              .set_check_mem_overlap(false)
              .check_all_same_dtype(false)
              .resize_outputs(false)
              .add_output(maybe_get_output())
              .add_const_input(mask_));
  }
  at::Tensor mask_;
};

struct FillMeta : at::TensorIteratorBase {
  void meta(const at::Tensor& self, const at::Scalar& /*value*/) {
    build(at::TensorIteratorConfig()
              .set_check_mem_overlap(false)  // fill_ of an expanded tensor
              .check_all_same_dtype(false)
              .resize_outputs(false)
              .add_output(maybe_get_output()));
  }
};

}  // namespace torch_backend
