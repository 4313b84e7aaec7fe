// What fake's kernel files share about element types: the C++ type of each
// DType, and the type it computes in.
#pragma once

#include <cstdint>
#include <type_traits>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <torch_backend/DeviceKernels.h>

namespace fake {

// Half and bfloat16 compute in float, as PyTorch's CPU kernels do.
template <typename T>
using Compute = std::conditional_t<
    std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16>, float, T>;

// Calls fn(T{}) for the C++ type of a floating `dtype`; kNotSupported for the
// others, so that a kernel defined for floating dtypes is instantiated for
// four types rather than ten.
template <typename Fn>
torch_backend::Status visit_floating_dtype(torch_backend::DType dtype, Fn fn) {
  switch (dtype) {
    case torch_backend::DType::Float16:
      return fn(c10::Half{});
    case torch_backend::DType::BFloat16:
      return fn(c10::BFloat16{});
    case torch_backend::DType::Float32:
      return fn(float{});
    case torch_backend::DType::Float64:
      return fn(double{});
    default:
      return torch_backend::kNotSupported;
  }
}

// Calls fn(T{}) for the C++ type of `dtype`.
template <typename Fn>
torch_backend::Status visit_dtype(torch_backend::DType dtype, Fn fn) {
  switch (dtype) {
    case torch_backend::DType::Bool:
      return fn(bool{});
    case torch_backend::DType::UInt8:
      return fn(std::uint8_t{});
    case torch_backend::DType::Int8:
      return fn(std::int8_t{});
    case torch_backend::DType::Int16:
      return fn(std::int16_t{});
    case torch_backend::DType::Int32:
      return fn(std::int32_t{});
    case torch_backend::DType::Int64:
      return fn(std::int64_t{});
    default:
      return visit_floating_dtype(dtype, fn);
  }
}

}  // namespace fake
