// The default c10d backend of every device: collectives on device tensors run
// on PyTorch's Gloo backend (TCP, so across machines too) through host
// stand-ins made by Staging. A device whose vendor ships a collective library
// (HCCL, NCCL) may register that backend instead.
#pragma once
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <functional>
#include <string>

#include "CollectiveOverrides.h"
#include "Staging.h"

namespace torch_backend::distributed {

class StagedBackend : public c10d::Backend {
 public:
  // Runs a callable with the GIL released where the caller holds it (the
  // Python layer provides it; this layer knows nothing of Python).
  using WithoutGil = std::function<void(const std::function<void()>&)>;

  StagedBackend(c10::intrusive_ptr<c10d::Backend> gloo, std::string name,
                StagingMode mode, WithoutGil without_gil);

  const std::string getBackendName() const override { return name_; }
  void setTimeout(std::chrono::milliseconds timeout) override;
  void abort() override;
  void shutdown() override;
  void setSequenceNumberForGroup() override;
  uint64_t getSequenceNumberForGroup() override;
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  void monitoredBarrier(const c10d::BarrierOptions& opts,
                        bool wait_all_ranks) override;

  TORCH_BACKEND_COLLECTIVE_OVERRIDES;
  Work allgather_coalesced(TensorLists& outputs, Tensors& inputs,
                           const c10d::AllgatherOptions& opts) override;
  Work recvAnysource(Tensors& tensors, int tag) override;

 private:
  // Every work goes through here, so a coalescing window can collect it.
  Work issued(Work work);
  // One collective over Gloo (StagedBackend.cpp): `tensors` read and written
  // in place, or `outputs` written from `inputs`.
  template <typename Run>
  Work in_place(Tensors& tensors, Run run);
  template <typename Out, typename In, typename Run>
  Work out_of_place(Out& outputs, In& inputs, Run run);
  // The Gloo backend; a clear error once the group was shut down.
  c10d::Backend* gloo();

  c10::intrusive_ptr<c10d::Backend> gloo_;
  WithoutGil without_gil_;
  std::mutex coalescing_mutex_;
  bool coalescing_ = false;
  std::vector<Work> coalesced_;
  std::string name_;
  StagingMode mode_;
};

}  // namespace torch_backend::distributed
