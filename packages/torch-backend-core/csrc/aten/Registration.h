// Internal: the pieces activate() registers with PyTorch, one per file.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>
#include <torch/library.h>

namespace torch_backend {

void register_hooks();
void register_minimal_kernels();
void register_cpu_fallback();
void register_autocast();
// Parameter identity across devices (ShallowCopy.cpp).
void register_shallow_copy_compatibility();
// Backend metadata (TensorMetadata.cpp): carrying a tensor's metadata to a
// view or copy made from it (unless that already has its own).
void inherit_tensor_metadata(const at::Tensor& from, const at::Tensor& to);
// The fused LSTM/GRU cells ATen calls for non-CPU devices (RnnCells.cpp).
void register_rnn_cells(torch::Library& aten);

// Grows or shrinks a device storage, keeping its contents (Kernels.cpp).
void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes);

}  // namespace torch_backend
