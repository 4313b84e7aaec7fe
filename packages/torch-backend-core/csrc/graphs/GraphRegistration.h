// Internal: core's graphs as PyTorch's PrivateUse1 graph implementation.
#pragma once

namespace torch_backend {

// torch >= 2.12: registers DeviceGraph behind torch.accelerator.Graph for the
// device (under its renamed PrivateUse1 name); earlier releases have no such
// registry and this does nothing. Call once the backend is renamed.
void register_graph_impl();

}  // namespace torch_backend
