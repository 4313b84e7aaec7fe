// The copying CPU fallback for devices whose memory the host cannot read:
// PyTorch's cpu_fallback copies arguments to the host, runs the CPU kernel
// and copies results and mutated arguments back.
#include <ATen/native/CPUFallback.h>

#include "Fallback.h"

namespace torch_backend {

void copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  apply_fallback_policy(op);
  at::native::cpu_fallback(op, stack);
}

}  // namespace torch_backend
