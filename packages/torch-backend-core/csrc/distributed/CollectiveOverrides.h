// The c10d::Backend collectives that both of core's c10d backends implement
// (NativeBackend over a device library, StagedBackend over Gloo), declared
// once: each class body expands TORCH_BACKEND_COLLECTIVE_OVERRIDES and adds
// what only it overrides.
#pragma once
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <vector>

#define TORCH_BACKEND_COLLECTIVE_OVERRIDES                                     \
  using Work = c10::intrusive_ptr<c10d::Work>;                                 \
  using Tensors = std::vector<at::Tensor>;                                     \
  using TensorLists = std::vector<std::vector<at::Tensor>>;                    \
                                                                               \
  Work broadcast(Tensors& tensors, const c10d::BroadcastOptions& opts)         \
      override;                                                                \
  Work allreduce(Tensors& tensors, const c10d::AllreduceOptions& opts)         \
      override;                                                                \
  Work allreduce_coalesced(                                                    \
      Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts) override; \
  Work reduce(Tensors& tensors, const c10d::ReduceOptions& opts) override;     \
  Work allgather(TensorLists& outputs, Tensors& inputs,                        \
                 const c10d::AllgatherOptions& opts) override;                 \
  Work _allgather_base(at::Tensor& output, at::Tensor& input,                  \
                       const c10d::AllgatherOptions& opts) override;           \
  Work allgather_into_tensor_coalesced(Tensors& outputs, Tensors& inputs,      \
                                       const c10d::AllgatherOptions& opts)     \
      override;                                                                \
  Work gather(TensorLists& outputs, Tensors& inputs,                           \
              const c10d::GatherOptions& opts) override;                       \
  Work scatter(Tensors& outputs, TensorLists& inputs,                          \
               const c10d::ScatterOptions& opts) override;                     \
  Work reduce_scatter(Tensors& outputs, TensorLists& inputs,                   \
                      const c10d::ReduceScatterOptions& opts) override;        \
  Work _reduce_scatter_base(at::Tensor& output, at::Tensor& input,             \
                            const c10d::ReduceScatterOptions& opts) override;  \
  Work reduce_scatter_tensor_coalesced(Tensors& outputs, Tensors& inputs,      \
                                       const c10d::ReduceScatterOptions& opts) \
      override;                                                                \
  Work alltoall_base(at::Tensor& output, at::Tensor& input,                    \
                     std::vector<int64_t>& output_split_sizes,                 \
                     std::vector<int64_t>& input_split_sizes,                  \
                     const c10d::AllToAllOptions& opts) override;              \
  Work alltoall(Tensors& outputs, Tensors& inputs,                             \
                const c10d::AllToAllOptions& opts) override;                   \
  Work send(Tensors& tensors, int dst_rank, int tag) override;                 \
  Work recv(Tensors& tensors, int src_rank, int tag) override;                 \
  Work barrier(const c10d::BarrierOptions& opts) override
