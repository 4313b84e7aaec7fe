// The host side of one collective. Gloo reads and writes host memory only, so
// every device tensor a collective touches gets a host stand-in: an alias of
// the device memory when host code can address it (zero-copy), otherwise a
// pinned buffer that is copied in before and copied back after.
#pragma once
#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <memory>
#include <vector>

#include "Completion.h"

namespace torch_backend::distributed {

// Whether device memory may be aliased or must be copied through pinned
// buffers (always the case for memory host code cannot address).
enum class StagingMode { kAuto, kPinned };

class Staging {
 public:
  explicit Staging(StagingMode mode);

  at::Tensor input(const at::Tensor& t);   // read by the collective
  at::Tensor output(const at::Tensor& t);  // written by it
  at::Tensor in_out(const at::Tensor& t);  // both (all_reduce, broadcast)
  std::vector<at::Tensor> inputs(const std::vector<at::Tensor>& ts);
  std::vector<at::Tensor> outputs(const std::vector<at::Tensor>& ts);
  std::vector<at::Tensor> in_outs(const std::vector<at::Tensor>& ts);
  std::vector<std::vector<at::Tensor>> inputs(
      const std::vector<std::vector<at::Tensor>>& lists);
  std::vector<std::vector<at::Tensor>> outputs(
      const std::vector<std::vector<at::Tensor>>& lists);

  // The op Gloo runs for `op`: AVG becomes SUM and the staged outputs are
  // divided by `world_size` afterwards (Gloo has no AVG). Call after the
  // outputs are staged; `divide` false leaves them undivided (reduce's
  // non-root ranks).
  c10d::ReduceOp gloo_op(const c10d::ReduceOp& op, int world_size,
                         bool divide = true);

  // The work to hand back: waits for `inner`, then finishes the copies.
  c10::intrusive_ptr<c10d::Work> finish(c10::intrusive_ptr<c10d::Work> inner);

 private:
  at::Tensor stage(const at::Tensor& t, bool read, bool write);

  StagingMode mode_;
  std::vector<c10::Device> synced_;
  std::shared_ptr<Completion> completion_ = std::make_shared<Completion>();
};

}  // namespace torch_backend::distributed
