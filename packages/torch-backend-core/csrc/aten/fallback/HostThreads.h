// Internal: how many OpenMP threads the host fallback's CPU kernels use.
//
// PyTorch runs backward for every non-CPU device on the autograd engine's
// device thread; CPU kernels called there start a second OpenMP team beside
// the main thread's, and on few cores the two teams' spinning workers
// preempt each other (docs/bench/profile.md: 54 context switches per small
// MLP step against 0.2 in a CPU-only process). Small calls gain nothing from
// intra-op threads, so they run on the calling thread alone.
#pragma once

#include <ATen/core/stack.h>

#include <cstdint>

namespace torch_backend {

class SerialForSmallWork {
 public:
  // Counts the elements of the tensors on the stack's last `num_args` values.
  SerialForSmallWork(const torch::jit::Stack& stack, size_t num_args);
  ~SerialForSmallWork();
  SerialForSmallWork(const SerialForSmallWork&) = delete;
  SerialForSmallWork& operator=(const SerialForSmallWork&) = delete;

 private:
  int previous_threads_ = 0;  // 0: unchanged
};

}  // namespace torch_backend
