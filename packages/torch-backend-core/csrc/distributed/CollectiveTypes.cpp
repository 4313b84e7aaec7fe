#include "CollectiveTypes.h"

#include <ATen/ops/mul.h>
#include <ATen/ops/view_as_real.h>
#include <c10/util/Exception.h>

#include "../aten/kernels/DTypes.h"

namespace torch_backend::distributed {

const char* op_name(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM:
      return "SUM";
    case c10d::ReduceOp::AVG:
      return "AVG";
    case c10d::ReduceOp::PRODUCT:
      return "PRODUCT";
    case c10d::ReduceOp::MIN:
      return "MIN";
    case c10d::ReduceOp::MAX:
      return "MAX";
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return "UNUSED";
  }
}

Buffer bytes_of(const at::Tensor& tensor) {
  return {tensor.data_ptr(),
          static_cast<std::size_t>(tensor.numel()) * tensor.element_size(),
          DType::UInt8};
}

Buffer reducible(const at::Tensor& tensor, const c10d::ReduceOp& op,
                 const char* library) {
  TORCH_CHECK_VALUE(
      op.op_ != c10d::ReduceOp::BAND && op.op_ != c10d::ReduceOp::BOR &&
          op.op_ != c10d::ReduceOp::BXOR && op.op_ != c10d::ReduceOp::UNUSED,
      "Cannot use ReduceOp.", op_name(op.op_), " with ", library);
  at::Tensor values = tensor;
  if (tensor.is_complex()) {
    TORCH_CHECK_VALUE(
        op.op_ == c10d::ReduceOp::SUM || op.op_ == c10d::ReduceOp::AVG ||
            op.op_ == c10d::ReduceOp::PREMUL_SUM,
        "ReduceOp.", op_name(op.op_), " is not supported for complex tensors");
    values = at::view_as_real(tensor);
  }
  const std::optional<DType> dtype = kernel_dtype(values.scalar_type());
  TORCH_CHECK_TYPE(dtype.has_value(), library, " cannot reduce tensors of ",
                   values.scalar_type());
  TORCH_CHECK_VALUE(
      op.op_ != c10d::ReduceOp::AVG ||
          at::isFloatingType(tensor.scalar_type()) || tensor.is_complex(),
      "ReduceOp.AVG needs floating-point or complex tensors, got ",
      tensor.scalar_type());
  return {values.data_ptr(), static_cast<std::size_t>(values.numel()), *dtype};
}

ReduceOp library_op(const c10d::ReduceOp& op, at::ScalarType dtype) {
  const bool logical = dtype == at::kBool;
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::PREMUL_SUM:
      return logical ? ReduceOp::Max : ReduceOp::Sum;
    case c10d::ReduceOp::PRODUCT:
      return logical ? ReduceOp::Min : ReduceOp::Product;
    case c10d::ReduceOp::MIN:
      return ReduceOp::Min;
    case c10d::ReduceOp::MAX:
      return ReduceOp::Max;
    case c10d::ReduceOp::AVG:
      return ReduceOp::Avg;
    default:
      TORCH_CHECK_VALUE(false, "unsupported reduce operation ",
                        op_name(op.op_));
  }
}

at::Tensor premultiplied(const at::Tensor& input, const c10d::ReduceOp& op) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) {
    return input;
  }
  const auto* supplement =
      dynamic_cast<const c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK_VALUE(supplement != nullptr,
                    "ReduceOp.PREMUL_SUM without its factor");
  return supplement->tensor_factor.defined()
             ? input.mul(supplement->tensor_factor)
             : input.mul(supplement->double_factor);
}

}  // namespace torch_backend::distributed
