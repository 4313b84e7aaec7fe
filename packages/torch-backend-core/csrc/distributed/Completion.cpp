#include "Completion.h"

#include <c10/core/DeviceGuard.h>
#include <c10/core/InferenceMode.h>

namespace torch_backend::distributed {

void Completion::run() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (done_) {
    return;
  }
  // Marked first: a copy that throws reports to this waiter, not to a retry.
  done_ = true;
  // Results land like NCCL's writes: no autograd record, and allowed into
  // inference tensors (this may run on Gloo's thread, outside the caller's
  // inference mode).
  c10::InferenceMode inference_mode;
  if (divisor_ != 1) {
    for (auto& host : written_host_) {
      host.div_(divisor_);
    }
  }
  for (auto& [host, device] : copy_back_) {
    c10::DeviceGuard guard(device.device());
    device.copy_(host);  // blocking: the pinned buffer is free afterwards
  }
  written_host_.clear();
  copy_back_.clear();
  keep_alive_.clear();
}

}  // namespace torch_backend::distributed
