#include "StagedBackend.h"

#include <utility>

#include "../aten/TorchCompat.h"
#include "StagedWork.h"

namespace torch_backend::distributed {

StagedBackend::StagedBackend(c10::intrusive_ptr<c10d::Backend> gloo,
                             std::string name, StagingMode mode,
                             WithoutGil without_gil)
    : c10d::Backend(gloo->getRank(), gloo->getSize()),
      gloo_(std::move(gloo)),
      without_gil_(std::move(without_gil)),
      name_(std::move(name)),
      mode_(mode) {}

c10d::Backend* StagedBackend::gloo() {
  TORCH_CHECK(gloo_, "the '", name_,
              "' process group was shut down (destroy_process_group)");
  return gloo_.get();
}

void StagedBackend::setTimeout(std::chrono::milliseconds timeout) {
  gloo()->setTimeout(timeout);
}
void StagedBackend::abort() {
  if (gloo_) {  // nothing left to abort once shut down
    gloo_->abort();
  }
}
// ProcessGroupGloo has no shutdown of its own: its worker threads live until
// it is destroyed, and a work one of them drops during interpreter exit can
// release Python objects (the work's ThreadLocalState) when the GIL can no
// longer be taken, which aborts the process ("terminate called without an
// active exception"). So destroy_process_group destroys it here, while Python
// is alive, with the GIL released so its workers can finish their works.
void StagedBackend::shutdown() {
  c10::intrusive_ptr<c10d::Backend> gloo = std::move(gloo_);
  if (!gloo) {
    return;
  }
  gloo->shutdown();
  without_gil_([&gloo] { gloo.reset(); });
}
void StagedBackend::setSequenceNumberForGroup() {
  gloo()->setSequenceNumberForGroup();
}
uint64_t StagedBackend::getSequenceNumberForGroup() {
  return gloo()->getSequenceNumberForGroup();
}
void StagedBackend::startCoalescing() {
  std::lock_guard<std::mutex> lock(coalescing_mutex_);
  TORCH_CHECK(!coalescing_,
              "startCoalescing called twice without endCoalescing");
  coalescing_ = true;
}

c10::intrusive_ptr<c10d::Work> StagedBackend::endCoalescing() {
  std::lock_guard<std::mutex> lock(coalescing_mutex_);
  TORCH_CHECK(coalescing_, "endCoalescing called without startCoalescing");
  coalescing_ = false;
  return c10::make_intrusive<CoalescedWork>(std::exchange(coalesced_, {}));
}

StagedBackend::Work StagedBackend::issued(Work work) {
  std::lock_guard<std::mutex> lock(coalescing_mutex_);
  if (coalescing_) {
    coalesced_.push_back(work);
  }
  return work;
}

void StagedBackend::monitoredBarrier(const c10d::BarrierOptions& opts,
                                     bool wait_all_ranks) {
  gloo()->monitoredBarrier(opts, wait_all_ranks);
}

// Each collective: stage what it reads and writes, run Gloo on the host
// stand-ins, hand back a work object that finishes the copies.

StagedBackend::Work StagedBackend::broadcast(
    Tensors& tensors, const c10d::BroadcastOptions& opts) {
  Staging s(mode_);
  auto host = s.in_outs(tensors);
  return issued(s.finish(gloo()->broadcast(host, opts)));
}

StagedBackend::Work StagedBackend::allreduce(
    Tensors& tensors, const c10d::AllreduceOptions& opts) {
  Staging s(mode_);
  auto host = s.in_outs(tensors);
  auto gloo_opts = opts;
  gloo_opts.reduceOp = s.gloo_op(opts.reduceOp, size_);
  return issued(s.finish(gloo()->allreduce(host, gloo_opts)));
}

StagedBackend::Work StagedBackend::allreduce_coalesced(
    Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  Staging s(mode_);
  auto host = s.in_outs(tensors);
  auto gloo_opts = opts;
  gloo_opts.reduceOp = s.gloo_op(opts.reduceOp, size_);
  return issued(s.finish(gloo()->allreduce_coalesced(host, gloo_opts)));
}

StagedBackend::Work StagedBackend::reduce(Tensors& tensors,
                                          const c10d::ReduceOptions& opts) {
  Staging s(mode_);
  auto host = s.in_outs(tensors);
  auto gloo_opts = opts;
  gloo_opts.reduceOp = s.gloo_op(opts.reduceOp, size_, rank_ == opts.rootRank);
  return issued(s.finish(gloo()->reduce(host, gloo_opts)));
}

StagedBackend::Work StagedBackend::allgather(
    TensorLists& outputs, Tensors& inputs, const c10d::AllgatherOptions& opts) {
  Staging s(mode_);
  auto host_in = s.inputs(inputs);
  auto host_out = s.outputs(outputs);
  return issued(s.finish(gloo()->allgather(host_out, host_in, opts)));
}

StagedBackend::Work StagedBackend::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  Staging s(mode_);
  auto host_in = s.input(input);
  auto host_out = s.output(output);
  return issued(s.finish(gloo()->_allgather_base(host_out, host_in, opts)));
}

StagedBackend::Work StagedBackend::allgather_coalesced(
    TensorLists& outputs, Tensors& inputs, const c10d::AllgatherOptions& opts) {
  Staging s(mode_);
  auto host_in = s.inputs(inputs);
  auto host_out = s.outputs(outputs);
  return issued(s.finish(gloo()->allgather_coalesced(host_out, host_in, opts)));
}

StagedBackend::Work StagedBackend::allgather_into_tensor_coalesced(
    Tensors& outputs, Tensors& inputs, const c10d::AllgatherOptions& opts) {
  Staging s(mode_);
  auto host_in = s.inputs(inputs);
  auto host_out = s.outputs(outputs);
  return issued(s.finish(
      gloo()->allgather_into_tensor_coalesced(host_out, host_in, opts)));
}

StagedBackend::Work StagedBackend::gather(TensorLists& outputs, Tensors& inputs,
                                          const c10d::GatherOptions& opts) {
  Staging s(mode_);
  auto host_in = s.inputs(inputs);
  auto host_out = s.outputs(outputs);
  return issued(s.finish(gloo()->gather(host_out, host_in, opts)));
}

StagedBackend::Work StagedBackend::scatter(Tensors& outputs,
                                           TensorLists& inputs,
                                           const c10d::ScatterOptions& opts) {
  Staging s(mode_);
  auto host_in = s.inputs(inputs);
  auto host_out = s.outputs(outputs);
  return issued(s.finish(gloo()->scatter(host_out, host_in, opts)));
}

StagedBackend::Work StagedBackend::reduce_scatter(
    Tensors& outputs, TensorLists& inputs,
    const c10d::ReduceScatterOptions& opts) {
  Staging s(mode_);
  auto host_in = s.inputs(inputs);
  auto host_out = s.outputs(outputs);
  auto gloo_opts = opts;
  gloo_opts.reduceOp = s.gloo_op(opts.reduceOp, size_);
  return issued(s.finish(gloo()->reduce_scatter(host_out, host_in, gloo_opts)));
}

StagedBackend::Work StagedBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input,
    const c10d::ReduceScatterOptions& opts) {
  Staging s(mode_);
  auto host_in = s.input(input);
  auto host_out = s.output(output);
  auto gloo_opts = opts;
  gloo_opts.reduceOp = s.gloo_op(opts.reduceOp, size_);
  return issued(
      s.finish(gloo()->_reduce_scatter_base(host_out, host_in, gloo_opts)));
}

StagedBackend::Work StagedBackend::reduce_scatter_tensor_coalesced(
    Tensors& outputs, Tensors& inputs, const c10d::ReduceScatterOptions& opts) {
  Staging s(mode_);
  auto host_in = s.inputs(inputs);
  auto host_out = s.outputs(outputs);
  auto gloo_opts = opts;
  gloo_opts.reduceOp = s.gloo_op(opts.reduceOp, size_);
  return issued(s.finish(
      gloo()->reduce_scatter_tensor_coalesced(host_out, host_in, gloo_opts)));
}

StagedBackend::Work StagedBackend::alltoall_base(
    at::Tensor& output, at::Tensor& input,
    std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes,
    const c10d::AllToAllOptions& opts) {
  Staging s(mode_);
  auto host_in = s.input(input);
  auto host_out = s.output(output);
  return issued(s.finish(gloo()->alltoall_base(
      host_out, host_in, output_split_sizes, input_split_sizes, opts)));
}

StagedBackend::Work StagedBackend::alltoall(Tensors& outputs, Tensors& inputs,
                                            const c10d::AllToAllOptions& opts) {
  TORCH_CHECK(compat::kGlooHasListAllToAll,
              "all_to_all over lists of tensors needs torch 2.12 or newer on '",
              getBackendName(),
              "' (this torch's Gloo lacks it): use all_to_all_single");
  Staging s(mode_);
  auto host_in = s.inputs(inputs);
  auto host_out = s.outputs(outputs);
  return issued(s.finish(gloo()->alltoall(host_out, host_in, opts)));
}

StagedBackend::Work StagedBackend::send(Tensors& tensors, int dst_rank,
                                        int tag) {
  Staging s(mode_);
  auto host = s.inputs(tensors);
  return issued(s.finish(gloo()->send(host, dst_rank, tag)));
}

StagedBackend::Work StagedBackend::recv(Tensors& tensors, int src_rank,
                                        int tag) {
  Staging s(mode_);
  auto host = s.outputs(tensors);
  return issued(s.finish(gloo()->recv(host, src_rank, tag)));
}

StagedBackend::Work StagedBackend::recvAnysource(Tensors& tensors, int tag) {
  Staging s(mode_);
  auto host = s.outputs(tensors);
  return issued(s.finish(gloo()->recvAnysource(host, tag)));
}

StagedBackend::Work StagedBackend::barrier(const c10d::BarrierOptions& opts) {
  return issued(gloo()->barrier(opts));
}

}  // namespace torch_backend::distributed
