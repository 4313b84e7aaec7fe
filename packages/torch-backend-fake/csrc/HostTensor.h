// Fake's "vendor library" view of device memory: a descriptor as a CPU tensor
// over the same bytes (fake's device memory is host memory), so its kernels
// can run ATen's CPU kernels on it.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>

#include <optional>

#include <torch_backend/DeviceKernels.h>

namespace fake {

inline at::ScalarType aten_dtype(torch_backend::DType dtype) {
  using torch_backend::DType;
  switch (dtype) {
    case DType::Bool:
      return at::kBool;
    case DType::UInt8:
      return at::kByte;
    case DType::Int8:
      return at::kChar;
    case DType::Int16:
      return at::kShort;
    case DType::Int32:
      return at::kInt;
    case DType::Int64:
      return at::kLong;
    case DType::Float16:
      return at::kHalf;
    case DType::BFloat16:
      return at::kBFloat16;
    case DType::Float32:
      return at::kFloat;
    case DType::Float64:
      return at::kDouble;
  }
  return at::kFloat;
}

// A CPU tensor over a descriptor's memory (host memory, on the fake device).
inline at::Tensor host_tensor(const torch_backend::TensorView& view) {
  const auto dtype = aten_dtype(view.dtype);
  char* data = static_cast<char*>(view.data) +
               view.offset * static_cast<std::int64_t>(c10::elementSize(dtype));
  return at::from_blob(data, at::IntArrayRef(view.sizes, view.dim),
                       at::IntArrayRef(view.strides, view.dim),
                       at::TensorOptions().dtype(dtype));
}

// An optional tensor argument (a bias, a weight): absent when its descriptor
// has no memory.
inline std::optional<at::Tensor> optional_tensor(
    const torch_backend::TensorView& view) {
  return view.data != nullptr ? std::optional<at::Tensor>(host_tensor(view))
                              : std::nullopt;
}

}  // namespace fake
