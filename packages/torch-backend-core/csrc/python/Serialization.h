// Internal: the Python layer's part of backend metadata (Serialization.cpp).
#pragma once

namespace torch_backend {

// Registers torch.save / torch.load's hook for backend metadata; once, at
// activation.
void register_metadata_serialization();

}  // namespace torch_backend
