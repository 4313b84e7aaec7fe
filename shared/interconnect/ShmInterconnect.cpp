#include "ShmInterconnect.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

namespace shm_interconnect {

// Whether a peer's process is gone: no such process, or a zombie (exited,
// not yet reaped by its parent, which may itself be waiting for us).
bool has_exited(pid_t pid) {
  if (kill(pid, 0) != 0) {
    return errno == ESRCH;
  }
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  std::FILE* stat = std::fopen(path, "r");
  if (stat == nullptr) {
    return false;
  }
  char line[512];
  const std::size_t length = std::fread(line, 1, sizeof(line) - 1, stat);
  std::fclose(stat);
  line[length] = 0;
  // "pid (command) state ...": the state follows the last ')'.
  const char* after_command = std::strrchr(line, ')');
  const char state = after_command != nullptr && after_command[1] == ' '
                         ? after_command[2]
                         : 0;
  return state == 'Z' || state == 'X';
}

std::size_t segment_bytes(int nranks) {
  const auto n = static_cast<std::size_t>(nranks);
  return sizeof(Segment) + n * n * sizeof(PairState) + n * 2 * kHalfBytes +
         n * n * kBoxBytes;
}

Comm::~Comm() { munmap(segment, bytes); }

Status join(const char* name, int nranks, int rank, int device, CommRef* comm) {
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
  auto joined = std::make_shared<Comm>(segment, bytes, nranks, rank, device);
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
  *comm = std::move(joined);
  return kSuccess;
}

// ---- element arithmetic

namespace {

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
        case ReduceOp::Avg:  // declined by the library (core divides a sum)
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
    result[i] = static_cast<T>(value);
  }
}

}  // namespace

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

void run_in_lanes(const std::vector<Lane>& lanes,
                  const std::function<void(std::size_t)>& run) {
  std::vector<Lane> distinct;
  std::vector<std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const auto found = std::find(distinct.begin(), distinct.end(), lanes[i]);
    if (found == distinct.end()) {
      distinct.push_back(lanes[i]);
      members.push_back({i});
    } else {
      members[found - distinct.begin()].push_back(i);
    }
  }
  if (members.size() == 1) {  // nothing to overlap: no thread
    for (std::size_t i : members.front()) {
      run(i);
    }
    return;
  }
  std::vector<std::thread> threads;
  for (const std::vector<std::size_t>& lane : members) {
    threads.emplace_back([&run, &lane] {
      for (std::size_t i : lane) {
        run(i);
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
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

}  // namespace shm_interconnect
