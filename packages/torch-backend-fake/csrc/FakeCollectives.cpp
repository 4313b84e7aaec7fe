// The fake device's collective library (DeviceCollectives.h): what NCCL is
// to a GPU, for the processes of one machine.
//
// A communicator is a POSIX shared-memory segment that every rank maps: a
// staging slot per rank for collectives and a mailbox per ordered pair of
// ranks for send/recv. Each call is enqueued on a fake stream like a kernel
// and runs on that stream's worker thread, which waits for its peers there,
// as an NCCL kernel spins on the GPU: the host returns at once, and the
// stream is busy until every rank has arrived.
//  - Collectives move data in chunks through the slots. Each chunk ends in a
//    barrier (every rank publishes how many chunks it reached); the two
//    halves of a slot alternate, so a rank writes the next chunk while its
//    peers still read the last one.
//  - A waiting rank gives up when its communicator is aborted, when a peer's
//    failure is published in the segment, or when a peer's process has
//    exited: the call fails with that status, which comm_async_error then
//    reports. Nothing else ends a wait: a hung peer is core's watchdog's to
//    detect (its timeout), and its abort ends the wait.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <torch_backend/DeviceCollectives.h>

#include "FakeHardware.h"

namespace fake {
namespace {

using torch_backend::CollectiveId;
using torch_backend::CommHandle;
using torch_backend::DType;
using torch_backend::kNotSupported;
using torch_backend::kSuccess;
using torch_backend::ReduceOp;
using torch_backend::StreamHandle;

// The library's status codes (after the machine's).
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
constexpr std::uint64_t kMagic = 0x66616b652d63636cULL;
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
  std::atomic<std::uint64_t> magic;
  std::atomic<std::int32_t> joined;
  // The first rank whose failure stopped the communicator, plus one (the
  // segment starts zeroed: 0 is none), and that failure's status.
  std::atomic<std::int32_t> failed_rank_plus_one;
  std::atomic<std::int32_t> failure;
  RankState ranks[kMaxRanks];
};

std::size_t segment_bytes(int nranks) {
  const auto n = static_cast<std::size_t>(nranks);
  return sizeof(Segment) + n * n * sizeof(PairState) + n * 2 * kHalfBytes +
         n * n * kBoxBytes;
}

std::size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      return 1;
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::Int32:
    case DType::Float32:
      return 4;
    case DType::Int64:
    case DType::Float64:
      return 8;
  }
  return 0;
}

bool is_floating(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 ||
         dtype == DType::Float32 || dtype == DType::Float64;
}

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
  ~Comm() { munmap(segment, bytes); }

  PairState& pair(int from, int to) {
    auto* pairs = reinterpret_cast<PairState*>(segment + 1);
    return pairs[from * nranks + to];
  }
  char* slot(int owner, std::uint64_t barrier) {
    char* slots = reinterpret_cast<char*>(segment + 1) +
                  sizeof(PairState) * nranks * nranks;
    return slots + (owner * 2 + barrier % 2) * kHalfBytes;
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
    const int failed =
        segment->failed_rank_plus_one.load(std::memory_order_acquire) - 1;
    if (failed >= 0 && failed != rank) {
      return kPeerFailed;
    }
    if (check_peers) {
      for (int r = 0; r < nranks; ++r) {
        const pid_t pid = segment->ranks[r].pid.load(std::memory_order_relaxed);
        if (r != rank && pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
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
    std::int32_t none = 0;
    if (segment->failed_rank_plus_one.compare_exchange_strong(none, who + 1)) {
      segment->failure.store(status, std::memory_order_release);
    }
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
  std::vector<std::uint64_t> sent;   // chunks sent to each peer
  std::vector<std::uint64_t> taken;  // chunks received from each peer
  std::atomic<bool> aborted{false};
  std::atomic<Status> async_error{kSuccess};
};

using CommRef = std::shared_ptr<Comm>;

// ---- element arithmetic
// ------------------------------------------------------

template <typename T>
using Accumulate = std::conditional_t<
    std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16>, float, T>;

template <typename T>
void reduce_typed(void* out, const std::vector<const char*>& parts,
                  std::size_t count, ReduceOp op) {
  auto* result = static_cast<T*>(out);
  for (std::size_t i = 0; i < count; ++i) {
    auto value =
        static_cast<Accumulate<T>>(reinterpret_cast<const T*>(parts[0])[i]);
    for (std::size_t p = 1; p < parts.size(); ++p) {
      const auto next =
          static_cast<Accumulate<T>>(reinterpret_cast<const T*>(parts[p])[i]);
      switch (op) {
        case ReduceOp::Sum:
        case ReduceOp::Avg:
          value = value + next;
          break;
        case ReduceOp::Product:
          value = value * next;
          break;
        case ReduceOp::Min:
          value = std::min(value, next);
          break;
        case ReduceOp::Max:
          value = std::max(value, next);
          break;
      }
    }
    if (op == ReduceOp::Avg) {
      value = value / static_cast<Accumulate<T>>(parts.size());
    }
    result[i] = static_cast<T>(value);
  }
}

void reduce_into(void* out, const std::vector<const char*>& parts,
                 std::size_t count, DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
      return reduce_typed<std::uint8_t>(out, parts, count, op);
    case DType::Int8:
      return reduce_typed<std::int8_t>(out, parts, count, op);
    case DType::Int16:
      return reduce_typed<std::int16_t>(out, parts, count, op);
    case DType::Int32:
      return reduce_typed<std::int32_t>(out, parts, count, op);
    case DType::Int64:
      return reduce_typed<std::int64_t>(out, parts, count, op);
    case DType::Float16:
      return reduce_typed<c10::Half>(out, parts, count, op);
    case DType::BFloat16:
      return reduce_typed<c10::BFloat16>(out, parts, count, op);
    case DType::Float32:
      return reduce_typed<float>(out, parts, count, op);
    case DType::Float64:
      return reduce_typed<double>(out, parts, count, op);
  }
}

// ---- the calls, as run on a stream's worker
// ----------------------------------

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
  const std::uint64_t number = ++comm.barriers;
  publish(comm.slot(comm.rank, number));
  if (Status status = comm.barrier(number); status != kSuccess) {
    return status;
  }
  collect([&](int owner) { return comm.slot(owner, number); });
  return kSuccess;
}

Status send_chunks(Comm& comm, const char* data, std::size_t bytes, int peer) {
  PairState& pair = comm.pair(comm.rank, peer);
  return in_chunks(bytes, 1, kBoxBytes, [&](std::size_t offset, std::size_t n) {
    const std::uint64_t done = comm.sent[peer];
    if (Status status = comm.wait_until(
            [&] { return pair.taken.load(std::memory_order_acquire) == done; });
        status != kSuccess) {
      return status;
    }
    std::memcpy(comm.box(comm.rank, peer), data + offset, n);
    pair.sent.store(++comm.sent[peer], std::memory_order_release);
    return kSuccess;
  });
}

Status recv_chunks(Comm& comm, char* data, std::size_t bytes, int peer) {
  PairState& pair = comm.pair(peer, comm.rank);
  return in_chunks(bytes, 1, kBoxBytes, [&](std::size_t offset, std::size_t n) {
    const std::uint64_t wanted = comm.taken[peer] + 1;
    if (Status status = comm.wait_until([&] {
          return pair.sent.load(std::memory_order_acquire) >= wanted;
        });
        status != kSuccess) {
      return status;
    }
    std::memcpy(data + offset, comm.box(peer, comm.rank), n);
    pair.taken.store(++comm.taken[peer], std::memory_order_release);
    return kSuccess;
  });
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
  if (Status status = run(comm); status != kSuccess) {
    comm.fail(status);
  }
}

// Sends and receives of one group at once, so that none waits for another
// (a rank's send to its peer and the peer's send back): a thread per
// communicator, peer and direction, which runs its calls in issue order (the
// order that matches them with the peer's).
void execute_concurrently(const std::vector<Call*>& calls) {
  std::vector<std::vector<Call*>> lanes;
  std::vector<std::tuple<Comm*, int, bool>> keys;
  for (Call* call : calls) {
    const auto key = std::make_tuple(call->comm.get(), call->peer, call->sends);
    const auto found = std::find(keys.begin(), keys.end(), key);
    if (found == keys.end()) {
      keys.push_back(key);
      lanes.push_back({call});
    } else {
      lanes[found - keys.begin()].push_back(call);
    }
  }
  std::vector<std::thread> threads;
  for (const std::vector<Call*>& lane : lanes) {
    threads.emplace_back([&lane] {
      for (Call* call : lane) {
        execute(*call->comm, call->run);
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
}

class FakeCollectives final : public torch_backend::DeviceCollectives {
 public:
  const char* library_name() override { return "fake collectives"; }

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
    const char* name = reinterpret_cast<const char*>(id.bytes);
    const int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    if (fd < 0) {
      return kSystemError;
    }
    const std::size_t bytes = segment_bytes(nranks);
    // Every rank sizes it alike; the pages read as zeros until written.
    void* memory =
        ftruncate(fd, static_cast<off_t>(bytes)) == 0
            ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
            : MAP_FAILED;
    close(fd);
    if (memory == MAP_FAILED) {
      shm_unlink(name);
      return kSystemError;
    }
    auto* segment = static_cast<Segment*>(memory);
    auto comm =
        std::make_shared<Comm>(segment, bytes, nranks, rank, current_device());
    segment->ranks[rank].pid.store(static_cast<std::int32_t>(getpid()));
    segment->joined.fetch_add(1);
    const auto deadline = Clock::now() + kJoinLimit;
    while (segment->joined.load() < nranks) {
      if (Clock::now() > deadline) {
        return kJoinTimeout;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    if (rank == 0) {
      shm_unlink(name);  // every rank has it mapped: the name may go
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
    if (op == ReduceOp::Avg && !is_floating(dtype)) {
      return kNotSupported;  // core sums and divides
    }
    const std::size_t size = element_size(dtype);
    return enqueue(handle, stream, [=](Comm& comm) {
      return in_chunks(count * size, size, kHalfBytes, [&](auto at, auto n) {
        return exchange(
            comm,
            [&](char* mine) {
              std::memcpy(mine, static_cast<const char*>(send) + at, n);
            },
            [&](auto slot_of) {
              std::vector<const char*> parts;
              for (int r = 0; r < comm.nranks; ++r) {
                parts.push_back(slot_of(r));
              }
              reduce_into(static_cast<char*>(recv) + at, parts, n / size, dtype,
                          op);
            });
      });
    });
  }

  Status broadcast(void* buffer, std::size_t count, DType dtype, int root,
                   CommHandle handle, StreamHandle stream) override {
    const std::size_t size = element_size(dtype);
    return enqueue(handle, stream, [=](Comm& comm) {
      if (root < 0 || root >= comm.nranks) {
        return static_cast<Status>(kInvalidArgument);
      }
      char* data = static_cast<char*>(buffer);
      return in_chunks(count * size, size, kHalfBytes, [&](auto at, auto n) {
        return exchange(
            comm,
            [&](char* mine) {
              if (comm.rank == root) {
                std::memcpy(mine, data + at, n);
              }
            },
            [&](auto slot_of) {
              if (comm.rank != root) {
                std::memcpy(data + at, slot_of(root), n);
              }
            });
      });
    });
  }

  Status reduce(const void* send, void* recv, std::size_t count, DType dtype,
                ReduceOp op, int root, CommHandle handle,
                StreamHandle stream) override {
    if (op == ReduceOp::Avg && !is_floating(dtype)) {
      return kNotSupported;
    }
    const std::size_t size = element_size(dtype);
    return enqueue(handle, stream, [=](Comm& comm) {
      if (root < 0 || root >= comm.nranks) {
        return static_cast<Status>(kInvalidArgument);
      }
      return in_chunks(count * size, size, kHalfBytes, [&](auto at, auto n) {
        return exchange(
            comm,
            [&](char* mine) {
              std::memcpy(mine, static_cast<const char*>(send) + at, n);
            },
            [&](auto slot_of) {
              if (comm.rank != root) {
                return;
              }
              std::vector<const char*> parts;
              for (int r = 0; r < comm.nranks; ++r) {
                parts.push_back(slot_of(r));
              }
              reduce_into(static_cast<char*>(recv) + at, parts, n / size, dtype,
                          op);
            });
      });
    });
  }

  Status all_gather(const void* send, void* recv, std::size_t send_count,
                    DType dtype, CommHandle handle,
                    StreamHandle stream) override {
    const std::size_t size = element_size(dtype);
    const std::size_t total = send_count * size;
    return enqueue(handle, stream, [=](Comm& comm) {
      return in_chunks(total, size, kHalfBytes, [&](auto at, auto n) {
        return exchange(
            comm,
            [&](char* mine) {
              std::memcpy(mine, static_cast<const char*>(send) + at, n);
            },
            [&](auto slot_of) {
              for (int r = 0; r < comm.nranks; ++r) {
                std::memcpy(static_cast<char*>(recv) + r * total + at,
                            slot_of(r), n);
              }
            });
      });
    });
  }

  Status reduce_scatter(const void* send, void* recv, std::size_t recv_count,
                        DType dtype, ReduceOp op, CommHandle handle,
                        StreamHandle stream) override {
    if (op == ReduceOp::Avg && !is_floating(dtype)) {
      return kNotSupported;
    }
    return scatter_exchange(send, recv, recv_count, dtype, handle, stream,
                            [op, dtype](void* out, auto& parts, auto count) {
                              reduce_into(out, parts, count, dtype, op);
                            });
  }

  Status all_to_all(const void* send, void* recv, std::size_t count,
                    DType dtype, CommHandle handle,
                    StreamHandle stream) override {
    // Rank r's block of every rank, side by side: recv[r * count + i].
    return enqueue(handle, stream, [=](Comm& comm) {
      const std::size_t size = element_size(dtype);
      const std::size_t block = count * size;
      const std::size_t limit = kHalfBytes / comm.nranks;
      return in_chunks(block, size, limit, [&](auto at, auto n) {
        return exchange(
            comm,
            [&](char* mine) {
              for (int r = 0; r < comm.nranks; ++r) {
                std::memcpy(mine + r * n,
                            static_cast<const char*>(send) + r * block + at, n);
              }
            },
            [&](auto slot_of) {
              for (int r = 0; r < comm.nranks; ++r) {
                std::memcpy(static_cast<char*>(recv) + r * block + at,
                            slot_of(r) + comm.rank * n, n);
              }
            });
      });
    });
  }

  Status send(const void* buffer, std::size_t count, DType dtype, int peer,
              CommHandle handle, StreamHandle stream) override {
    const std::size_t bytes = count * element_size(dtype);
    if (peer < 0) {
      return kInvalidArgument;
    }
    return enqueue(
        handle, stream,
        [=](Comm& comm) {
          return send_chunks(comm, static_cast<const char*>(buffer), bytes,
                             peer);
        },
        peer, true);
  }

  Status recv(void* buffer, std::size_t count, DType dtype, int peer,
              CommHandle handle, StreamHandle stream) override {
    const std::size_t bytes = count * element_size(dtype);
    if (peer < 0) {
      return kInvalidArgument;
    }
    return enqueue(
        handle, stream,
        [=](Comm& comm) {
          return recv_chunks(comm, static_cast<char*>(buffer), bytes, peer);
        },
        peer, false);
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
      execute_concurrently(point_to_point);
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
      default:
        return "unknown fake collectives status " + std::to_string(status);
    }
  }

 private:
  // reduce_scatter's shape: rank r's chunk holds its block for every rank,
  // side by side; each rank combines the blocks meant for it.
  template <typename Combine>
  Status scatter_exchange(const void* send, void* recv, std::size_t count,
                          DType dtype, CommHandle handle, StreamHandle stream,
                          Combine combine) {
    return enqueue(handle, stream, [=](Comm& comm) {
      const std::size_t size = element_size(dtype);
      const std::size_t block = count * size;
      const std::size_t limit = kHalfBytes / comm.nranks;
      return in_chunks(block, size, limit, [&](auto at, auto n) {
        return exchange(
            comm,
            [&](char* mine) {
              for (int r = 0; r < comm.nranks; ++r) {
                std::memcpy(mine + r * n,
                            static_cast<const char*>(send) + r * block + at, n);
              }
            },
            [&](auto slot_of) {
              std::vector<const char*> parts;
              for (int r = 0; r < comm.nranks; ++r) {
                parts.push_back(slot_of(r) + comm.rank * n);
              }
              combine(static_cast<char*>(recv) + at, parts, n / size);
            });
      });
    });
  }

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
