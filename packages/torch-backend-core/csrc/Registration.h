// Internal: the pieces activate() registers with PyTorch, one per file.
#pragma once

namespace torch_backend {

void register_device_guard();
void register_hooks();
void register_minimal_kernels();
void register_cpu_fallback();

}  // namespace torch_backend
