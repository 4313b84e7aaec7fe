// What a staged collective does once Gloo is done with its host stand-ins
// (Staging.h): AVG's division, copies back to the device. Shared by the work
// object and its future (StagedWork.h); runs exactly once.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace torch_backend::distributed {

class Completion {
 public:
  void run();
  std::vector<at::Tensor> results;  // device tensors Work::result() reports

 private:
  friend class Staging;
  std::mutex mutex_;
  bool done_ = false;
  int64_t divisor_ = 1;
  std::vector<at::Tensor> written_host_;  // what Gloo writes, in host memory
  std::vector<std::pair<at::Tensor, at::Tensor>> copy_back_;  // host, device
  std::vector<at::Tensor> keep_alive_;  // inputs, until the work is done
};

}  // namespace torch_backend::distributed
