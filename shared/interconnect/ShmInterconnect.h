// A machine's interconnect for the processes of one host: what an emulated
// collective library runs on, as NVLink and its DMA engines are to NCCL.
// Test support shared by the emulated devices: fake's collective library
// (packages/torch-backend-fake/csrc/FakeCollectives.cpp) and the ACL
// emulator's HCCL (packages/torch-backend-npu/emulator/Hccl.cpp) are built
// on it. Torch-free but for c10's Half and BFloat16 in the .cpp.
//
// A communicator is a POSIX shared-memory segment that every rank maps: a
// staging slot per rank for collectives and a mailbox per ordered pair of
// ranks for send/recv.
//  - Collectives move data in chunks through the slots. Each chunk ends in a
//    barrier (every rank publishes how many chunks it reached); the two
//    halves of a slot alternate, so a rank writes the next chunk while its
//    peers still read the last one.
//  - A waiting rank gives up when its communicator is aborted, when a peer's
//    failure is published in the segment, or when a peer's process has
//    exited: the call fails with that status. Nothing else ends a wait: a
//    hung peer is core's watchdog's to detect (its timeout), and its abort
//    ends the wait.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include <torch_backend/DeviceCollectives.h>

namespace shm_interconnect {

using torch_backend::DType;
using torch_backend::element_size;
using torch_backend::kSuccess;
using torch_backend::ReduceOp;
using torch_backend::Status;
using Clock = std::chrono::steady_clock;

// The interconnect's status codes (clear of fake's machine codes below 20).
enum CollectiveCode : Status {
  kCommAborted = 20,
  kPeerFailed = 21,
  kPeerExited = 22,
  kInvalidArgument = 23,
  kJoinTimeout = 24,
  kSystemError = 25,
};

constexpr int kMaxRanks = 64;
constexpr std::size_t kHalfBytes = std::size_t{2} << 20;  // slot = 2 halves
constexpr std::size_t kBoxBytes = std::size_t{1} << 20;   // per rank pair
constexpr auto kJoinLimit = std::chrono::minutes(5);

struct alignas(64) RankState {
  std::atomic<std::uint64_t> arrived;  // barriers this rank has reached
  std::atomic<std::int32_t> pid;
};
struct alignas(64) PairState {
  std::atomic<std::uint64_t> sent;   // chunks the sender put in the box
  std::atomic<std::uint64_t> taken;  // chunks the receiver took out
};

// The start of the segment; pairs, slots and mailboxes follow it.
struct Segment {
  std::atomic<std::int32_t> joined;
  // The first failure that stopped the communicator, published at once:
  // (its rank + 1) << 32 | its status. The segment starts zeroed: 0 is none.
  std::atomic<std::uint64_t> failure;
  RankState ranks[kMaxRanks];
};

std::size_t segment_bytes(int nranks);

// Whether a peer's process is gone: no such process, or a zombie (exited,
// not yet reaped by its parent, which may itself be waiting for us).
bool has_exited(pid_t pid);

// One process's view of a communicator. Its counters are touched only by
// the stream worker running its calls (core issues a communicator's calls on
// one stream), the flags from any thread.
struct Comm {
  Comm(Segment* segment, std::size_t bytes, int nranks, int rank, int device)
      : segment(segment),
        bytes(bytes),
        nranks(nranks),
        rank(rank),
        device(device),
        sent(nranks, 0),
        taken(nranks, 0) {}
  ~Comm();

  PairState& pair(int from, int to) {
    auto* pairs = reinterpret_cast<PairState*>(segment + 1);
    return pairs[from * nranks + to];
  }
  // The half of `owner`'s slot that chunk number `chunk` uses.
  char* slot(int owner, std::uint64_t chunk) {
    char* slots = reinterpret_cast<char*>(segment + 1) +
                  sizeof(PairState) * nranks * nranks;
    return slots + (owner * 2 + chunk % 2) * kHalfBytes;
  }
  char* box(int from, int to) {
    return slot(0, 0) + 2 * kHalfBytes * nranks +
           (from * nranks + to) * kBoxBytes;
  }

  // Why waiting must stop, or kSuccess to go on waiting.
  Status interrupted(bool check_peers) {
    if (aborted.load(std::memory_order_relaxed)) {
      return kCommAborted;
    }
    const std::uint64_t failure =
        segment->failure.load(std::memory_order_acquire);
    if (failure != 0 && static_cast<int>(failure >> 32) - 1 != rank) {
      // A peer's exit reads as such on every rank; other failures as the
      // peer's failure.
      return static_cast<Status>(failure & 0xffffffffu) == kPeerExited
                 ? kPeerExited
                 : kPeerFailed;
    }
    if (check_peers) {
      for (int r = 0; r < nranks; ++r) {
        const pid_t pid = segment->ranks[r].pid.load(std::memory_order_relaxed);
        if (r != rank && pid > 0 && has_exited(pid)) {
          publish_failure(r, kPeerExited);
          return kPeerExited;
        }
      }
    }
    return kSuccess;
  }

  // Spins briefly (latency), then sleeps in short steps; looks for exited
  // peers every 50 ms.
  template <typename Ready>
  Status wait_until(Ready ready) {
    auto next_peer_check = Clock::now() + std::chrono::milliseconds(50);
    for (long spins = 0; !ready(); ++spins) {
      bool check_peers = false;
      if (spins > 200) {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        if (Clock::now() > next_peer_check) {
          check_peers = true;
          next_peer_check = Clock::now() + std::chrono::milliseconds(50);
        }
      } else {
        std::this_thread::yield();
      }
      if (Status why = interrupted(check_peers); why != kSuccess) {
        return why;
      }
    }
    return kSuccess;
  }

  // Every rank has finished the chunk before barrier `number`.
  Status barrier(std::uint64_t number) {
    segment->ranks[rank].arrived.store(number, std::memory_order_release);
    return wait_until([&] {
      for (int r = 0; r < nranks; ++r) {
        if (segment->ranks[r].arrived.load(std::memory_order_acquire) <
            number) {
          return false;
        }
      }
      return true;
    });
  }

  void publish_failure(int who, Status status) {
    std::uint64_t none = 0;
    const std::uint64_t failure = (static_cast<std::uint64_t>(who + 1) << 32) |
                                  static_cast<std::uint32_t>(status);
    segment->failure.compare_exchange_strong(none, failure);
  }

  void fail(Status status) {
    Status expected = kSuccess;
    async_error.compare_exchange_strong(expected, status);
    if (status != kPeerFailed && status != kPeerExited) {
      publish_failure(rank, status);  // peers stop waiting for this rank
    }
  }

  Segment* const segment;
  const std::size_t bytes;
  const int nranks;
  const int rank;
  const int device;
  std::uint64_t barriers = 0;
  // Chunks moved through the slots: a rank writes chunk c into the half
  // chunk c - 2 used once every rank has passed chunk c - 1's first barrier,
  // so after every rank finished reading chunk c - 2.
  std::uint64_t chunks = 0;
  std::vector<std::uint64_t> sent;   // chunks sent to each peer
  std::vector<std::uint64_t> taken;  // chunks received from each peer
  std::atomic<bool> aborted{false};
  std::atomic<Status> async_error{kSuccess};
};

using CommRef = std::shared_ptr<Comm>;

// Maps the segment `name` (shared by the ranks) and joins it as `rank` of
// `nranks` on `device`; waits until every rank has joined.
Status join(const char* name, int nranks, int rank, int device, CommRef* comm);

// recv = op over `parts` (count elements of dtype each); floating types
// accumulate in float or wider.
void reduce_into(void* out, const std::vector<const char*>& parts,
                 std::size_t count, DType dtype, ReduceOp op);

// Chunks of at most `limit` bytes, whole elements: body(offset, bytes).
template <typename Body>
Status in_chunks(std::size_t total, std::size_t element, std::size_t limit,
                 Body body) {
  const std::size_t step = std::max<std::size_t>(limit / element, 1) * element;
  for (std::size_t offset = 0; offset < total; offset += step) {
    if (Status status = body(offset, std::min(step, total - offset));
        status != kSuccess) {
      return status;
    }
  }
  return kSuccess;
}

// A collective's step: `publish` fills this rank's half of the slot, the
// barrier passes, `collect` reads the peers' halves.
template <typename Publish, typename Collect>
Status exchange(Comm& comm, Publish publish, Collect collect) {
  const std::uint64_t chunk = comm.chunks++;
  publish(comm.slot(comm.rank, chunk));
  if (Status status = comm.barrier(++comm.barriers); status != kSuccess) {
    return status;
  }
  collect([&](int owner) { return comm.slot(owner, chunk); });
  return kSuccess;
}

// all_reduce's step, in two phases so that each rank reduces only its share
// of the chunk: `reduce` combines share `rank` of every slot into this
// rank's own slot; after a second barrier `gather` reads every rank's share.
template <typename Publish, typename Reduce, typename Gather>
Status exchange_reduced(Comm& comm, Publish publish, Reduce reduce,
                        Gather gather) {
  const std::uint64_t chunk = comm.chunks++;
  publish(comm.slot(comm.rank, chunk));
  auto slot_of = [&](int owner) { return comm.slot(owner, chunk); };
  if (Status status = comm.barrier(++comm.barriers); status != kSuccess) {
    return status;
  }
  reduce(slot_of);
  if (Status status = comm.barrier(++comm.barriers); status != kSuccess) {
    return status;
  }
  gather(slot_of);
  return kSuccess;
}

// Transfers that must run at once, as a group's sends and receives among the
// same ranks (a rank's send to its peer and the peer's send back would wait
// for each other if run one by one): run(i) for every i < lanes.size(), one
// thread per distinct lane, each lane's transfers in their order (the order
// that matches them with the peer's). A lane is (communicator, peer,
// whether it sends).
using Lane = std::tuple<const void*, int, bool>;
void run_in_lanes(const std::vector<Lane>& lanes,
                  const std::function<void(std::size_t)>& run);

// Point to point through the pair's mailbox, in chunks.
Status send_chunks(Comm& comm, const char* data, std::size_t bytes, int peer);
Status recv_chunks(Comm& comm, char* data, std::size_t bytes, int peer);

}  // namespace shm_interconnect
