// The c10d backend over the device's collective library (DeviceCollectives.h),
// written once for every backend that has one: NCCL's role for a GPU.
//
// One communicator per device, created at the first collective on it (or at
// init_process_group(device_id=...)). Each collective runs on the
// communicator's stream after the caller's current stream has reached it, and
// returns a NativeWork, which the group's Watchdog fails on a timeout or a
// library error; CPU tensors in the same group go to the Gloo backend the
// group was made with. Every op goes into the flight recorder
// (FlightRecorder.h); a failing group dumps it on each of its ranks
// (FailureDumps.h). Calls are serialised: DDP issues collectives from
// autograd's threads while the main thread may issue others.
#pragma once
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "CollectiveOverrides.h"
#include "Communicator.h"
#include "NativeWork.h"
#include "Watchdog.h"

namespace torch_backend::distributed {

// The native backend's options (Backend.options in Python), a type of its
// own so that Python can copy them: torch.distributed.split_group deep-copies
// the parent's options, and c10d's base Options cannot be copied there.
struct NativeBackendOptions : c10d::Backend::Options {
  using Options::Options;
};

class NativeBackend : public c10d::Backend {
 public:
  // Makes the Gloo backend that serves a group's CPU tensors, from its store,
  // rank, size and timeout: each group split from this one needs its own.
  using CpuBackendFactory = std::function<c10::intrusive_ptr<c10d::Backend>(
      const c10::intrusive_ptr<c10d::Store>&, int, int,
      std::chrono::milliseconds)>;

  // `timeout`: how long a collective may run before the watchdog fails the
  // group; `end_process_on_error`: the watchdog ends the process instead.
  // Without `make_cpu_backend`, CPU tensors are refused. `global_ranks`: the
  // members' ranks in the default group (empty: 0 to size - 1).
  NativeBackend(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                std::vector<std::uint64_t> global_ranks,
                DeviceCollectives& library, CpuBackendFactory make_cpu_backend,
                std::string name, std::chrono::milliseconds timeout,
                bool end_process_on_error);
  ~NativeBackend() override;

  const std::string getBackendName() const override { return name_; }
  void eagerConnectSingleDevice(at::Device device) override;
  void abort() override;
  void shutdown() override;
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return sequence_; }
  // batch_isend_irecv and _coalescing_manager go through start/end
  // coalescing, so a library's group_start/group_end can issue them as one.
  bool supportsCoalescing() const override { return true; }
  // torch.distributed.split_group: the members' group gets communicators of
  // its own from fresh ids, as new_group does, and a Gloo backend of its own
  // for CPU tensors.
  bool supportsSplitting() const override { return true; }
  c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() override;
  c10::intrusive_ptr<c10d::Backend> split(
      const c10::intrusive_ptr<c10d::Store>& store,
      const std::vector<int>& ranks,
      const c10::intrusive_ptr<c10d::Backend::Options>& opts) override;
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  TORCH_BACKEND_COLLECTIVE_OVERRIDES;

 public:
  // What a collective enqueues on the communicator's stream (which is
  // current while it runs), given dense stand-ins of its inputs and outputs;
  // it may add tensors the work must keep alive.
  struct Call {
    Communicator& comm;
    StreamHandle stream;
    const Tensors& in;
    const Tensors& out;
    Tensors& keep_alive;
    // Stream work that uses the library's results (copies out, a division):
    // run at once, or, inside a coalescing group, after group_end has
    // enqueued the group's calls.
    std::function<void(std::function<void()>)> after;
  };
  using Enqueue = std::function<void(const Call&)>;

 private:
  // Orders the communication stream after the current stream, enqueues, and
  // returns the work. `inputs` and `outputs` (the work's result) are on one
  // device; a tensor may be both (in place). A tensor that is not dense gets
  // a dense stand-in, copied in before and back after, as the library needs.
  // `peer`: a send's or receive's other rank.
  Work launch(c10d::OpType type, const char* name, const Tensors& inputs,
              const Tensors& outputs, const Enqueue& enqueue,
              bool blocking = false, int peer = -1);
  // The group as the flight recorder names it: c10d's uid and description.
  GroupName recorded_name() const;
  // Sends and receives issued as one group of the library (all_to_all,
  // gather, scatter): sends[r] goes to rank r, recvs[r] comes from it
  // (undefined tensors: nothing).
  static void exchange(const Call& call, const Tensors& sends,
                       const Tensors& recvs);
  std::shared_ptr<Communicator> communicator(c10::Device device);
  c10d::Backend& cpu(const char* op);
  // A CPU tensor's work from Gloo; inside a coalescing window it joins the
  // window's work, which batch_isend_irecv and _coalescing_manager wait for.
  Work on_cpu(Work work);
  Watchdog& watchdog();

  c10::intrusive_ptr<c10d::Store> store_;
  const std::vector<std::uint64_t> global_ranks_;
  DeviceCollectives& library_;
  CpuBackendFactory make_cpu_backend_;
  c10::intrusive_ptr<c10d::Backend> cpu_backend_;
  // The last group split from this one: ProcessGroup::splitGroup asks the
  // backend of each device type, and this one serves the device and CPU.
  c10::weak_intrusive_ptr<c10d::Backend> last_split_{
      c10::intrusive_ptr<c10d::Backend>()};
  std::string last_split_name_;
  std::string name_;
  std::recursive_mutex mutex_;
  std::map<c10::DeviceIndex, std::shared_ptr<Communicator>> comms_;
  int comms_created_ = 0;
  uint64_t sequence_ = 0;
  // The flight recorder's numbers: the group's, and its collectives and
  // point-to-point ops so far.
  const std::size_t recorded_id_;
  std::size_t collectives_ = 0;
  std::size_t point_to_point_ops_ = 0;
  bool ranks_recorded_ = false;
  c10::DeviceIndex last_device_ = -1;
  // Unfinished works: they keep their tensors alive until the stream is
  // past them, even where the caller drops the work without waiting.
  // Oldest first; `swept_` is its size after the last full sweep.
  std::deque<c10::intrusive_ptr<NativeWork>> in_flight_;
  std::size_t swept_ = 0;
  // Between startCoalescing and endCoalescing.
  bool coalescing_ = false;
  bool grouped_ = false;  // the library collects the calls (group_start)
  std::vector<c10::intrusive_ptr<NativeWork>> coalesced_;
  std::vector<Work> coalesced_on_cpu_;
  std::vector<std::pair<c10::Stream, std::vector<std::function<void()>>>>
      after_group_;
  const std::chrono::milliseconds timeout_;
  const bool end_process_on_error_;
  std::unique_ptr<Watchdog> watchdog_;  // started with the first collective
};

}  // namespace torch_backend::distributed
