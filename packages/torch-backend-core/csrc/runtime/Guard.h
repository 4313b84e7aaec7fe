// Internal: the c10 device guard over the runtime (torch.Stream, torch.Event
// and torch.accelerator go through it).
#pragma once

namespace torch_backend {

// Registers the guard for PrivateUse1; once per process (activation).
void register_device_guard();

}  // namespace torch_backend
