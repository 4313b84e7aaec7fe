// Internal: device timing for PyTorch's legacy profiler (use_kineto=False),
// through its PrivateUse1 ProfilerStubs, over the runtime's events.
#pragma once

namespace torch_backend {

// Registers the stubs once; safe to call at every activation.
void register_legacy_profiler_stubs();

}  // namespace torch_backend
