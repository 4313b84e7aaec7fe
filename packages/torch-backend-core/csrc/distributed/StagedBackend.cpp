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

namespace {

// The host stand-ins of what a collective reads or writes: one tensor, a
// list, or a list of lists (Staging's forms).
at::Tensor read(Staging& s, const at::Tensor& t) { return s.input(t); }
std::vector<at::Tensor> read(Staging& s, const std::vector<at::Tensor>& ts) {
  return s.inputs(ts);
}
std::vector<std::vector<at::Tensor>> read(
    Staging& s, const std::vector<std::vector<at::Tensor>>& lists) {
  return s.inputs(lists);
}
at::Tensor written(Staging& s, const at::Tensor& t) { return s.output(t); }
std::vector<at::Tensor> written(Staging& s, const std::vector<at::Tensor>& ts) {
  return s.outputs(ts);
}
std::vector<std::vector<at::Tensor>> written(
    Staging& s, const std::vector<std::vector<at::Tensor>>& lists) {
  return s.outputs(lists);
}

// `opts` with its reduce op made Gloo's (AVG runs as SUM, then a division of
// the staged outputs; `divide` false: not on this rank).
template <typename Options>
Options for_gloo(const Options& opts, Staging& s, int size,
                 bool divide = true) {
  Options gloo_opts = opts;
  gloo_opts.reduceOp = s.gloo_op(opts.reduceOp, size, divide);
  return gloo_opts;
}

}  // namespace

// Each collective: stage what it reads and writes, run Gloo on the host
// stand-ins (`run(gloo, staging, ...)`, after the outputs are staged, as
// for_gloo needs), hand back a work object that finishes the copies.
template <typename Run>
StagedBackend::Work StagedBackend::in_place(Tensors& tensors, Run run) {
  Staging s(mode_);
  auto host = s.in_outs(tensors);
  return issued(s.finish(run(*gloo(), s, host)));
}

template <typename Out, typename In, typename Run>
StagedBackend::Work StagedBackend::out_of_place(Out& outputs, In& inputs,
                                                Run run) {
  Staging s(mode_);
  auto host_in = read(s, inputs);
  auto host_out = written(s, outputs);
  return issued(s.finish(run(*gloo(), s, host_out, host_in)));
}

StagedBackend::Work StagedBackend::broadcast(
    Tensors& tensors, const c10d::BroadcastOptions& opts) {
  return in_place(tensors, [&](c10d::Backend& g, Staging&, auto& host) {
    return g.broadcast(host, opts);
  });
}

StagedBackend::Work StagedBackend::allreduce(
    Tensors& tensors, const c10d::AllreduceOptions& opts) {
  return in_place(tensors, [&](c10d::Backend& g, Staging& s, auto& host) {
    return g.allreduce(host, for_gloo(opts, s, size_));
  });
}

StagedBackend::Work StagedBackend::allreduce_coalesced(
    Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  return in_place(tensors, [&](c10d::Backend& g, Staging& s, auto& host) {
    return g.allreduce_coalesced(host, for_gloo(opts, s, size_));
  });
}

StagedBackend::Work StagedBackend::reduce(Tensors& tensors,
                                          const c10d::ReduceOptions& opts) {
  return in_place(tensors, [&](c10d::Backend& g, Staging& s, auto& host) {
    return g.reduce(host, for_gloo(opts, s, size_, rank_ == opts.rootRank));
  });
}

StagedBackend::Work StagedBackend::allgather(
    TensorLists& outputs, Tensors& inputs, const c10d::AllgatherOptions& opts) {
  return out_of_place(outputs, inputs,
                      [&](c10d::Backend& g, Staging&, auto& out, auto& in) {
                        return g.allgather(out, in, opts);
                      });
}

StagedBackend::Work StagedBackend::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  return out_of_place(output, input,
                      [&](c10d::Backend& g, Staging&, auto& out, auto& in) {
                        return g._allgather_base(out, in, opts);
                      });
}

StagedBackend::Work StagedBackend::allgather_coalesced(
    TensorLists& outputs, Tensors& inputs, const c10d::AllgatherOptions& opts) {
  return out_of_place(outputs, inputs,
                      [&](c10d::Backend& g, Staging&, auto& out, auto& in) {
                        return g.allgather_coalesced(out, in, opts);
                      });
}

StagedBackend::Work StagedBackend::allgather_into_tensor_coalesced(
    Tensors& outputs, Tensors& inputs, const c10d::AllgatherOptions& opts) {
  return out_of_place(outputs, inputs,
                      [&](c10d::Backend& g, Staging&, auto& out, auto& in) {
                        return g.allgather_into_tensor_coalesced(out, in, opts);
                      });
}

StagedBackend::Work StagedBackend::gather(TensorLists& outputs, Tensors& inputs,
                                          const c10d::GatherOptions& opts) {
  return out_of_place(outputs, inputs,
                      [&](c10d::Backend& g, Staging&, auto& out, auto& in) {
                        return g.gather(out, in, opts);
                      });
}

StagedBackend::Work StagedBackend::scatter(Tensors& outputs,
                                           TensorLists& inputs,
                                           const c10d::ScatterOptions& opts) {
  return out_of_place(outputs, inputs,
                      [&](c10d::Backend& g, Staging&, auto& out, auto& in) {
                        return g.scatter(out, in, opts);
                      });
}

StagedBackend::Work StagedBackend::reduce_scatter(
    Tensors& outputs, TensorLists& inputs,
    const c10d::ReduceScatterOptions& opts) {
  return out_of_place(
      outputs, inputs, [&](c10d::Backend& g, Staging& s, auto& out, auto& in) {
        return g.reduce_scatter(out, in, for_gloo(opts, s, size_));
      });
}

StagedBackend::Work StagedBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input,
    const c10d::ReduceScatterOptions& opts) {
  return out_of_place(
      output, input, [&](c10d::Backend& g, Staging& s, auto& out, auto& in) {
        return g._reduce_scatter_base(out, in, for_gloo(opts, s, size_));
      });
}

StagedBackend::Work StagedBackend::reduce_scatter_tensor_coalesced(
    Tensors& outputs, Tensors& inputs, const c10d::ReduceScatterOptions& opts) {
  return out_of_place(outputs, inputs,
                      [&](c10d::Backend& g, Staging& s, auto& out, auto& in) {
                        return g.reduce_scatter_tensor_coalesced(
                            out, in, for_gloo(opts, s, size_));
                      });
}

StagedBackend::Work StagedBackend::alltoall_base(
    at::Tensor& output, at::Tensor& input,
    std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes,
    const c10d::AllToAllOptions& opts) {
  return out_of_place(output, input,
                      [&](c10d::Backend& g, Staging&, auto& out, auto& in) {
                        return g.alltoall_base(out, in, output_split_sizes,
                                               input_split_sizes, opts);
                      });
}

StagedBackend::Work StagedBackend::alltoall(Tensors& outputs, Tensors& inputs,
                                            const c10d::AllToAllOptions& opts) {
  TORCH_CHECK(compat::kGlooHasListAllToAll,
              "all_to_all over lists of tensors needs torch 2.12 or newer on '",
              getBackendName(),
              "' (this torch's Gloo lacks it): use all_to_all_single");
  return out_of_place(outputs, inputs,
                      [&](c10d::Backend& g, Staging&, auto& out, auto& in) {
                        return g.alltoall(out, in, opts);
                      });
}

// Point-to-point: one side only.
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
