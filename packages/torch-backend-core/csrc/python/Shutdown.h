// Internal: core's part of interpreter exit (see Shutdown.cpp).
#pragma once

namespace torch_backend {

// Called from an atexit handler with the GIL held: waits for the device work
// and PyTorch's autograd device threads, so that nothing runs on them once
// the interpreter finalises. Never throws.
void prepare_for_exit();

}  // namespace torch_backend
