// Core's element types (DType.h) for ATen's: what device kernels and
// collectives are handed. Below the kernel launch machinery, so collectives
// use it without it.
#pragma once

#include <c10/core/ScalarType.h>

#include <optional>

#include <torch_backend/DType.h>

namespace torch_backend {

// The kernel dtype of an ATen dtype; nullopt for dtypes kernels never see
// (complex, quantized, float8: those calls stay on the fallback).
std::optional<DType> kernel_dtype(at::ScalarType type);

}  // namespace torch_backend
