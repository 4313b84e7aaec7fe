// The fake device's collective library (DeviceCollectives.h): what NCCL is
// to a GPU, for the processes of one machine, over the fake machine's
// interconnect (shared/interconnect/ShmInterconnect.h). Each call is enqueued
// on a fake stream like a kernel and runs on that stream's worker thread, which
// waits for its peers there, as an NCCL kernel spins on the GPU: the host
// returns at once, and the stream is busy until every rank has arrived. A
// failed call fails its communicator, which comm_async_error then reports. Like
// HCCL it has no average (ReduceOp::Avg is declined): core's sum-and-divide
// path runs here.
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <unordered_map>
#include <vector>

#include <torch_backend/DeviceCollectives.h>

#include "FakeHardware.h"
#include "FaultInjection.h"
#include "ShmCollectives.h"

namespace fake {
namespace {

using shm_interconnect::Comm;
using shm_interconnect::CommRef;
using torch_backend::CollectiveId;
using torch_backend::CommHandle;
using torch_backend::DType;
using torch_backend::element_size;
using torch_backend::kNotSupported;
using torch_backend::kSuccess;
using torch_backend::ReduceOp;
using torch_backend::StreamHandle;
using namespace shm_interconnect;  // the status codes

// Fake's device memory is host memory (in both memory modes), which the
// stream workers running the collectives may touch.
char* host(const void* device_pointer) {
  return static_cast<char*>(const_cast<void*>(device_pointer));
}

// ---- groups
// --------------------------------------------------------------------

struct Call {
  CommRef comm;
  StreamHandle stream;
  std::function<Status(Comm&)> run;
  int peer = -1;  // point to point only
  bool sends = false;
};

thread_local int group_depth = 0;
thread_local std::vector<Call> grouped;

// Runs on the stream's worker: a failed communicator runs nothing more.
void execute(Comm& comm, const std::function<Status(Comm&)>& run) {
  if (comm.aborted.load() || comm.async_error.load() != kSuccess) {
    return;
  }
  Status status = faults().check(Operation::Collective, comm.device);
  if (faults().check(Operation::CollectiveHang, comm.device) != 0) {
    status = comm.wait_until([] { return false; });  // until aborted
  }
  if (status == kSuccess) {
    status = run(comm);
  }
  if (status != kSuccess) {
    comm.fail(status);
  }
}

class FakeCollectives final : public torch_backend::DeviceCollectives {
 public:
  const char* library_name() override { return "fake collectives"; }
  // PyTorch's flight-recorder analyser knows no "fake": its dumps borrow
  // the name the analyser gives other accelerators' collective libraries.
  const char* flight_recorder_name() override { return "xccl"; }

  Status get_unique_id(CollectiveId* id) override {
    static std::atomic<unsigned> counter{0};
    std::random_device entropy;
    std::snprintf(reinterpret_cast<char*>(id->bytes), 64,
                  "/torch_backend_fake_ccl_%d_%u_%08x%08x",
                  static_cast<int>(getpid()), counter.fetch_add(1), entropy(),
                  entropy());
    return kSuccess;
  }

  Status comm_init_rank(CommHandle* handle, int nranks, const CollectiveId& id,
                        int rank) override {
    if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) {
      return kInvalidArgument;
    }
    CommRef comm;
    const Status status =
        shm_interconnect::join(reinterpret_cast<const char*>(id.bytes), nranks,
                               rank, current_device(), &comm);
    if (status != kSuccess) {
      return status;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    comms_[comm.get()] = comm;
    *handle = comm.get();
    return kSuccess;
  }

  Status comm_destroy(CommHandle handle) override {
    // Calls still queued hold the communicator; it is unmapped after them.
    return release(handle) ? kSuccess : kInvalidArgument;
  }

  Status comm_abort(CommHandle handle) override {
    CommRef comm = find(handle);
    if (!comm) {
      return kInvalidArgument;
    }
    comm->aborted.store(true);
    comm->fail(kCommAborted);
    release(handle);
    return kSuccess;
  }

  Status comm_async_error(CommHandle handle, Status* error) override {
    CommRef comm = find(handle);
    if (!comm) {
      return kInvalidArgument;
    }
    *error = comm->async_error.load();
    return kSuccess;
  }

  Status all_reduce(const void* send, void* recv, std::size_t count,
                    DType dtype, ReduceOp op, CommHandle handle,
                    StreamHandle stream) override {
    if (op == ReduceOp::Avg) {
      return kNotSupported;  // as HCCL: core sums and divides
    }
    return enqueue(handle, stream, [=](Comm& comm) {
      return shm_interconnect::all_reduce(comm, host(send), host(recv), count,
                                          dtype, op);
    });
  }

  Status broadcast(void* buffer, std::size_t count, DType dtype, int root,
                   CommHandle handle, StreamHandle stream) override {
    return enqueue(handle, stream, [=](Comm& comm) {
      return shm_interconnect::broadcast(comm, host(buffer), count, dtype,
                                         root);
    });
  }

  Status reduce(const void* send, void* recv, std::size_t count, DType dtype,
                ReduceOp op, int root, CommHandle handle,
                StreamHandle stream) override {
    if (op == ReduceOp::Avg) {
      return kNotSupported;
    }
    return enqueue(handle, stream, [=](Comm& comm) {
      return shm_interconnect::reduce(comm, host(send), host(recv), count,
                                      dtype, op, root);
    });
  }

  Status all_gather(const void* send, void* recv, std::size_t send_count,
                    DType dtype, CommHandle handle,
                    StreamHandle stream) override {
    return enqueue(handle, stream, [=](Comm& comm) {
      return shm_interconnect::all_gather(comm, host(send), host(recv),
                                          send_count, dtype);
    });
  }

  Status reduce_scatter(const void* send, void* recv, std::size_t recv_count,
                        DType dtype, ReduceOp op, CommHandle handle,
                        StreamHandle stream) override {
    if (op == ReduceOp::Avg) {
      return kNotSupported;
    }
    return enqueue(handle, stream, [=](Comm& comm) {
      return shm_interconnect::reduce_scatter(comm, host(send), host(recv),
                                              recv_count, dtype, op);
    });
  }

  Status all_to_all(const void* send, void* recv, std::size_t count,
                    DType dtype, CommHandle handle,
                    StreamHandle stream) override {
    return enqueue(handle, stream, [=](Comm& comm) {
      return shm_interconnect::all_to_all(comm, host(send), host(recv), count,
                                          dtype);
    });
  }

  Status send(const void* buffer, std::size_t count, DType dtype, int peer,
              CommHandle handle, StreamHandle stream) override {
    const auto* bytes = static_cast<const char*>(buffer);
    return point_to_point(count, dtype, peer, handle, stream, true,
                          [=](Comm& comm, std::size_t size) {
                            return send_chunks(comm, bytes, size, peer);
                          });
  }

  Status recv(void* buffer, std::size_t count, DType dtype, int peer,
              CommHandle handle, StreamHandle stream) override {
    auto* bytes = static_cast<char*>(buffer);
    return point_to_point(count, dtype, peer, handle, stream, false,
                          [=](Comm& comm, std::size_t size) {
                            return recv_chunks(comm, bytes, size, peer);
                          });
  }

  // A send (or receive) of `count` elements with `peer`: `transfer` moves
  // their bytes over the group's shared memory once the stream reaches it.
  template <typename Transfer>
  Status point_to_point(std::size_t count, DType dtype, int peer,
                        CommHandle handle, StreamHandle stream, bool sending,
                        Transfer transfer) {
    if (peer < 0) {
      return kInvalidArgument;
    }
    const std::size_t size = count * element_size(dtype);
    return enqueue(
        handle, stream, [=](Comm& comm) { return transfer(comm, size); }, peer,
        sending);
  }

  Status group_start() override {
    ++group_depth;
    return kSuccess;
  }

  // One stream work item for the whole group: collectives in order, then
  // every send and receive at once.
  Status group_end() override {
    if (group_depth == 0) {
      return kInvalidArgument;
    }
    if (--group_depth > 0 || grouped.empty()) {
      return kSuccess;
    }
    auto calls = std::make_shared<std::vector<Call>>(std::move(grouped));
    grouped.clear();
    const Call& first = calls->front();
    Machine::get().stream(first.stream, first.comm->device)->enqueue([calls] {
      std::vector<Call*> point_to_point;
      for (Call& call : *calls) {
        if (call.peer >= 0) {
          point_to_point.push_back(&call);
        } else {
          execute(*call.comm, call.run);
        }
      }
      std::vector<shm_interconnect::Lane> lanes;
      for (const Call* call : point_to_point) {
        lanes.emplace_back(call->comm.get(), call->peer, call->sends);
      }
      shm_interconnect::run_in_lanes(lanes, [&](std::size_t i) {
        execute(*point_to_point[i]->comm, point_to_point[i]->run);
      });
    });
    return kSuccess;
  }

  std::string error_text(Status status) override {
    switch (status) {
      case kCommAborted:
        return "the communicator was aborted";
      case kPeerFailed:
        return "a peer rank's communicator failed or was aborted";
      case kPeerExited:
        return "a peer rank's process exited during a collective";
      case kInvalidArgument:
        return "invalid argument (rank, root, peer or communicator)";
      case kJoinTimeout:
        return "not every rank joined the communicator within 5 minutes";
      case kSystemError:
        return "creating or mapping the communicator's shared memory failed "
               "(is /dev/shm full?)";
      case kDeviceLost:
        return "the device was lost (torch_backend_fake.faults.lose_device)";
      case kInjectedFault:
        return "injected fault (TORCH_BACKEND_FAKE_FAULTS or "
               "torch_backend_fake.faults)";
      default:
        return "unknown fake collectives status " + std::to_string(status);
    }
  }

 private:
  // A collective (peer < 0) or a send or receive to `peer`.
  Status enqueue(CommHandle handle, StreamHandle stream,
                 std::function<Status(Comm&)> run, int peer = -1,
                 bool sends = false) {
    CommRef comm = find(handle);
    if (!comm) {
      return kInvalidArgument;
    }
    if (peer >= 0 && (peer >= comm->nranks || peer == comm->rank)) {
      return kInvalidArgument;
    }
    if (group_depth > 0) {
      grouped.push_back({comm, stream, std::move(run), peer, sends});
      return kSuccess;
    }
    Machine::get()
        .stream(stream, comm->device)
        ->enqueue([comm, run = std::move(run)] { execute(*comm, run); });
    return kSuccess;
  }

  CommRef find(CommHandle handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = comms_.find(handle);
    return found == comms_.end() ? nullptr : found->second;
  }

  bool release(CommHandle handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    return comms_.erase(handle) == 1;
  }

  std::mutex mutex_;
  std::unordered_map<CommHandle, CommRef> comms_;
};

}  // namespace
}  // namespace fake

TORCH_BACKEND_DEFINE_DEVICE_COLLECTIVES(fake::FakeCollectives)
