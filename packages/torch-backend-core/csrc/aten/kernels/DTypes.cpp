#include "DTypes.h"

namespace torch_backend {

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

}  // namespace torch_backend
