#include "NativeBackend.h"

#include <torch/csrc/distributed/c10d/ParamCommsUtils.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <ATen/ops/cat.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <utility>

#include "CollectiveTypes.h"
#include "FlightRecorder.h"
#include "StagedWork.h"

namespace torch_backend::distributed {
namespace {

std::vector<std::uint64_t> all_ranks_if_empty(std::vector<std::uint64_t> ranks,
                                              int size) {
  if (ranks.empty()) {
    ranks.resize(static_cast<std::size_t>(size));
    std::iota(ranks.begin(), ranks.end(), 0);
  }
  return ranks;
}

std::size_t next_recorded_group_id() {
  static std::atomic<std::size_t> next{0};
  return next++;
}

}  // namespace

NativeBackend::NativeBackend(c10::intrusive_ptr<c10d::Store> store, int rank,
                             int size, std::vector<std::uint64_t> global_ranks,
                             DeviceCollectives& library,
                             CpuBackendFactory make_cpu_backend,
                             std::string name,
                             std::chrono::milliseconds timeout,
                             bool end_process_on_error)
    : c10d::Backend(rank, size),
      store_(std::move(store)),
      global_ranks_(all_ranks_if_empty(std::move(global_ranks), size)),
      library_(library),
      make_cpu_backend_(std::move(make_cpu_backend)),
      name_(std::move(name)),
      recorded_id_(next_recorded_group_id()),
      timeout_(timeout),
      end_process_on_error_(end_process_on_error) {
  TORCH_CHECK_VALUE(global_ranks_.size() == static_cast<std::size_t>(size),
                    name_, ": ", global_ranks_.size(),
                    " global ranks for a group of ", size);
  // Its own keys: the communicators' ids are under store_.
  if (make_cpu_backend_) {
    cpu_backend_ = make_cpu_backend_(
        c10::make_intrusive<c10d::PrefixStore>("gloo/", store_), rank, size,
        timeout_);
  }
}

c10::intrusive_ptr<c10d::Backend::Options> NativeBackend::getBackendOptions() {
  return c10::make_intrusive<NativeBackendOptions>(name_, timeout_);
}

c10::intrusive_ptr<c10d::Backend> NativeBackend::split(
    const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
    const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  const auto mine = std::find(ranks.begin(), ranks.end(), getRank());
  if (mine == ranks.end()) {
    return nullptr;  // not a member: no group, as with NCCL and Gloo
  }
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const std::string group = opts ? opts->group_name : std::string();
  if (auto child = last_split_.lock(); child && last_split_name_ == group) {
    return child;
  }
  std::vector<std::uint64_t> child_ranks;
  for (const int member : ranks) {
    child_ranks.push_back(global_ranks_.at(static_cast<std::size_t>(member)));
  }
  auto child = c10::make_intrusive<NativeBackend>(
      c10::make_intrusive<c10d::PrefixStore>(name_ + "/", store),
      static_cast<int>(mine - ranks.begin()), static_cast<int>(ranks.size()),
      std::move(child_ranks), library_, make_cpu_backend_, name_,
      opts ? opts->timeout : timeout_, end_process_on_error_);
  last_split_ = c10::weak_intrusive_ptr<c10d::Backend>(
      c10::intrusive_ptr<c10d::Backend>(child));
  last_split_name_ = group;
  return child;
}

Watchdog& NativeBackend::watchdog() {
  if (!watchdog_) {
    const int global_rank =
        static_cast<int>(global_ranks_.at(static_cast<std::size_t>(getRank())));
    watchdog_ = std::make_unique<Watchdog>(
        name_ + " (rank " + std::to_string(getRank()) + " of " +
            std::to_string(getSize()) + ")",
        timeout_, end_process_on_error_,
        dumps_on_failure()
            ? std::make_shared<FailureDumps>(store_, global_rank, global_ranks_)
            : nullptr);
  }
  return *watchdog_;
}

GroupName NativeBackend::recorded_name() const {
  return {getGroupUid().empty() ? name_ : getGroupUid(), getGroupDesc()};
}

NativeBackend::~NativeBackend() = default;

std::shared_ptr<Communicator> NativeBackend::communicator(c10::Device device) {
  auto found = comms_.find(device.index());
  if (found != comms_.end()) {
    return found->second;
  }
  // Ranks use different devices: the key counts communicators instead.
  const std::string key =
      name_ + "/communicator/" + std::to_string(comms_created_++);
  auto comm = Communicator::create(library_, *store_, key, getRank(), getSize(),
                                   device);
  comms_[device.index()] = comm;
  watchdog().watch(std::weak_ptr<Communicator>(comm));
  return comm;
}

c10d::Backend& NativeBackend::cpu(const char* op) {
  TORCH_CHECK(cpu_backend_, name_, ": ", op,
              " on CPU tensors needs the group's Gloo backend, which was shut "
              "down");
  return *cpu_backend_;
}

c10::intrusive_ptr<c10d::Work> NativeBackend::on_cpu(Work work) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (coalescing_) {
    coalesced_on_cpu_.push_back(work);
  }
  return work;
}

void NativeBackend::eagerConnectSingleDevice(at::Device device) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  communicator(device);
}

void NativeBackend::abort() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (watchdog_) {
    watchdog_->fail_unfinished(name_ + ": the process group was aborted");
  }
  for (auto& [index, comm] : comms_) {
    comm->abort();
  }
  if (cpu_backend_) {
    cpu_backend_->abort();
  }
}

void NativeBackend::shutdown() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  watchdog_.reset();
  in_flight_.clear();
  comms_.clear();  // destroyed once their enqueued work is done
  if (cpu_backend_) {
    cpu_backend_->shutdown();
  }
}

void NativeBackend::startCoalescing() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  TORCH_CHECK(!coalescing_,
              "startCoalescing called twice without endCoalescing");
  coalescing_ = true;
  const Status status = library_.group_start();
  grouped_ = status == kSuccess;
  TORCH_CHECK(grouped_ || status == kNotSupported, library_.library_name(),
              " group_start failed: ", library_.error_text(status));
}

c10::intrusive_ptr<c10d::Work> NativeBackend::endCoalescing() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  TORCH_CHECK(coalescing_, "endCoalescing called without startCoalescing");
  coalescing_ = false;
  std::vector<c10::intrusive_ptr<NativeWork>> works = std::move(coalesced_);
  coalesced_.clear();
  std::vector<Work> all(works.begin(), works.end());
  all.insert(all.end(), coalesced_on_cpu_.begin(), coalesced_on_cpu_.end());
  coalesced_on_cpu_.clear();
  if (grouped_) {
    grouped_ = false;
    const Status status = library_.group_end();
    TORCH_CHECK(status == kSuccess, library_.library_name(),
                " group_end failed: ", library_.error_text(status));
    // The group's calls are enqueued only now: then what uses their results.
    for (auto& [stream, steps] : after_group_) {
      const c10::StreamGuard on_comm(stream);
      for (auto& step : steps) {
        step();
      }
    }
    after_group_.clear();
    for (auto& work : works) {
      work->state()->record_end();
    }
  }
  return c10::make_intrusive<CoalescedWork>(std::move(all));
}

c10::intrusive_ptr<c10d::Work> NativeBackend::launch(
    c10d::OpType type, const char* name, const Tensors& inputs,
    const Tensors& outputs, const Enqueue& enqueue, bool blocking, int peer) {
  const at::Tensor& first = inputs.empty() ? outputs.at(0) : inputs.front();
  const c10::Device device = first.device();
  for (const Tensors* list : {&inputs, &outputs}) {
    for (const at::Tensor& tensor : *list) {
      TORCH_CHECK_VALUE(tensor.device() == device, name,
                        ": every tensor must be on ", device, ", got one on ",
                        tensor.device());
    }
  }
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  // In PyTorch's profiler as NCCL's collectives are: a record_param_comms
  // event with the op, sizes, dtype, group and ranks (Chrome trace, Kineto).
  int64_t in_elements = 0, out_elements = 0;
  for (const at::Tensor& tensor : inputs) {
    in_elements += tensor.numel();
  }
  for (const at::Tensor& tensor : outputs) {
    out_elements += tensor.numel();
  }
  const bool point_to_point =
      type == c10d::OpType::SEND || type == c10d::OpType::RECV;
  RECORD_PARAM_COMMS_DATA(
      std::make_tuple(static_cast<int64_t>(sequence_ + 1), point_to_point),
      std::make_tuple(getGroupUid().empty() ? name_ : getGroupUid(),
                      getGroupDesc()),
      inputs, outputs, getRank(), name, in_elements, out_elements,
      first.scalar_type(), std::vector<int64_t>(), std::vector<int64_t>(),
      /*globalRankStart=*/0, /*globalRankStride=*/1, getSize());
  if (const std::string failed = watchdog().failure(); !failed.empty()) {
    C10_THROW_ERROR(
        DistBackendError,
        name_ + " " + name + ": the process group failed earlier: " + failed);
  }
  std::shared_ptr<Communicator> comm = communicator(device);
  last_device_ = device.index();
  // The collective reads what the caller's stream has written so far.
  const c10::impl::VirtualGuardImpl guard_impl(device.type());
  c10::Event ready(device.type());
  ready.record(guard_impl.getStream(device));
  ready.block(comm->stream());
  Tensors keep_alive = inputs;
  keep_alive.insert(keep_alive.end(), outputs.begin(), outputs.end());
  const bool deferred = coalescing_ && grouped_;
  const bool enqueued = comm->while_usable([&] {
    const c10::StreamGuard on_comm(comm->stream());
    // Dense stand-ins, one per distinct tensor (in place: the same one).
    std::vector<std::pair<at::Tensor, at::Tensor>> stand_ins;
    auto dense = [&](const at::Tensor& tensor, bool read) {
      if (tensor.is_non_overlapping_and_dense()) {
        return tensor;
      }
      for (auto& [original, stand_in] : stand_ins) {
        if (original.is_same(tensor)) {
          return stand_in;
        }
      }
      at::Tensor stand_in = read ? tensor.contiguous()
                                 : at::empty(tensor.sizes(), tensor.options());
      stand_ins.emplace_back(tensor, stand_in);
      keep_alive.push_back(stand_in);
      return stand_in;
    };
    Tensors in, out;
    for (const at::Tensor& tensor : inputs) {
      in.push_back(dense(tensor, true));
    }
    for (const at::Tensor& tensor : outputs) {
      out.push_back(dense(tensor, false));
    }
    std::vector<std::function<void()>> finish;
    enqueue(Call{*comm, comm->stream().native_handle(), in, out, keep_alive,
                 [&finish](std::function<void()> step) {
                   finish.push_back(std::move(step));
                 }});
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (!out[i].is_same(outputs[i])) {
        finish.emplace_back([original = outputs[i], stand_in = out[i]] {
          original.copy_(stand_in);
        });
      }
    }
    if (deferred) {
      after_group_.emplace_back(comm->stream(), std::move(finish));
    } else {
      for (auto& step : finish) {
        step();
      }
    }
  });
  if (!enqueued) {  // the watchdog aborted the group meanwhile
    C10_THROW_ERROR(DistBackendError,
                    name_ + " " + name +
                        ": the process group failed: " + watchdog().failure());
  }
  ++sequence_;
  std::string description =
      name_ + " " + name + " #" + std::to_string(sequence_) + " (" +
      std::to_string(first.numel()) + " x " +
      std::string(c10::toString(first.scalar_type())) + ", " +
      comm->describe() +
      (getGroupUid().empty() ? std::string()
                             : ", process group '" + getGroupUid() + "'") +
      ")";
  auto state = std::make_shared<WorkState>(comm, std::move(description),
                                           end_process_on_error_,
                                           watchdog().dumps_first());
  if (!ranks_recorded_) {
    record_group_ranks(recorded_name(), global_ranks_);
    ranks_recorded_ = true;
  }
  ++(point_to_point ? point_to_point_ops_ : collectives_);
  state->trace_id =
      record_op(RecordedOp{recorded_id_, recorded_name(), collectives_,
                           point_to_point_ops_, sequence_,
                           profiling_name(library_, name, getRank(), peer),
                           point_to_point, timeout_},
                inputs, outputs, state->progress);
  auto work = c10::make_intrusive<NativeWork>(state, type, outputs,
                                              std::move(keep_alive), blocking);
  if (coalescing_) {
    coalesced_.push_back(work);
  }
  if (!deferred) {
    state->record_end();
  }
  watchdog().watch(state);
  // Finished works let go of their tensors; unfinished ones stay here. A
  // communication stream finishes its works in order, so the oldest go first
  // and a sweep stops at the first unfinished one; a full sweep once the list
  // doubled since the last one lets go of what finished behind a slower
  // stream. O(1) amortised per collective however far the device lags (a
  // full sweep per collective made 10,000 collectives between two host
  // synchronisations quadratic).
  while (!in_flight_.empty() && in_flight_.front()->isCompleted()) {
    in_flight_.pop_front();
  }
  if (in_flight_.size() >= std::max<std::size_t>(64, 2 * swept_)) {
    in_flight_.erase(
        std::remove_if(in_flight_.begin(), in_flight_.end(),
                       [](auto& pending) { return pending->isCompleted(); }),
        in_flight_.end());
    swept_ = in_flight_.size();
  }
  in_flight_.push_back(work);
  return work;
}

void NativeBackend::exchange(const Call& call, const Tensors& sends,
                             const Tensors& recvs) {
  DeviceCollectives& library = call.comm.library();
  const Status started = library.group_start();
  TORCH_CHECK_NOT_IMPLEMENTED(
      started == kSuccess, library.library_name(),
      " has no group_start: all_to_all, gather and scatter need it");
  const int me = call.comm.rank();
  for (int peer = 0; peer < call.comm.size(); ++peer) {
    const at::Tensor& outgoing = sends[peer];
    const at::Tensor& incoming = recvs[peer];
    if (peer == me) {
      if (outgoing.defined() && incoming.defined()) {
        incoming.copy_(outgoing);
      }
      continue;
    }
    if (outgoing.defined() && outgoing.numel() > 0) {
      const Buffer buffer = bytes_of(outgoing);
      call.comm.check(library.send(buffer.data, buffer.count, buffer.dtype,
                                   peer, call.comm.handle(), call.stream),
                      "send");
    }
    if (incoming.defined() && incoming.numel() > 0) {
      const Buffer buffer = bytes_of(incoming);
      call.comm.check(library.recv(buffer.data, buffer.count, buffer.dtype,
                                   peer, call.comm.handle(), call.stream),
                      "recv");
    }
  }
  call.comm.check(library.group_end(), "group_end");
}

}  // namespace torch_backend::distributed
