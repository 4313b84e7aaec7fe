// The element types of the device interfaces' tensor descriptors (kernels,
// collectives), and their sizes: one small header, so that an interface that
// needs only the enum does not pull in the whole kernel interface.
#pragma once

#include <cstddef>
#include <cstdint>

namespace torch_backend {

enum class DType : std::int8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};

// Bytes per element of `dtype`.
constexpr std::size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      return 1;
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::Int32:
    case DType::Float32:
      return 4;
    case DType::Int64:
    case DType::Float64:
      return 8;
  }
  return 0;
}

}  // namespace torch_backend
