// The default c10d backend of every device: collectives on device tensors run
// on PyTorch's Gloo backend (TCP, so across machines too) through host
// stand-ins made by Staging. A device whose vendor ships a collective library
// (HCCL, NCCL) may register that backend instead.
#pragma once
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <functional>
#include <string>

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

  using Work = c10::intrusive_ptr<c10d::Work>;
  using Tensors = std::vector<at::Tensor>;
  using TensorLists = std::vector<std::vector<at::Tensor>>;

  Work broadcast(Tensors& tensors, const c10d::BroadcastOptions& opts) override;
  Work allreduce(Tensors& tensors, const c10d::AllreduceOptions& opts) override;
  Work allreduce_coalesced(
      Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  Work reduce(Tensors& tensors, const c10d::ReduceOptions& opts) override;
  Work allgather(TensorLists& outputs, Tensors& inputs,
                 const c10d::AllgatherOptions& opts) override;
  Work _allgather_base(at::Tensor& output, at::Tensor& input,
                       const c10d::AllgatherOptions& opts) override;
  Work allgather_coalesced(TensorLists& outputs, Tensors& inputs,
                           const c10d::AllgatherOptions& opts) override;
  Work allgather_into_tensor_coalesced(
      Tensors& outputs, Tensors& inputs,
      const c10d::AllgatherOptions& opts) override;
  Work gather(TensorLists& outputs, Tensors& inputs,
              const c10d::GatherOptions& opts) override;
  Work scatter(Tensors& outputs, TensorLists& inputs,
               const c10d::ScatterOptions& opts) override;
  Work reduce_scatter(Tensors& outputs, TensorLists& inputs,
                      const c10d::ReduceScatterOptions& opts) override;
  Work _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                            const c10d::ReduceScatterOptions& opts) override;
  Work reduce_scatter_tensor_coalesced(
      Tensors& outputs, Tensors& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  Work alltoall_base(at::Tensor& output, at::Tensor& input,
                     std::vector<int64_t>& output_split_sizes,
                     std::vector<int64_t>& input_split_sizes,
                     const c10d::AllToAllOptions& opts) override;
  Work alltoall(Tensors& outputs, Tensors& inputs,
                const c10d::AllToAllOptions& opts) override;
  Work send(Tensors& tensors, int dst_rank, int tag) override;
  Work recv(Tensors& tensors, int src_rank, int tag) override;
  Work recvAnysource(Tensors& tensors, int tag) override;
  Work barrier(const c10d::BarrierOptions& opts) override;

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
