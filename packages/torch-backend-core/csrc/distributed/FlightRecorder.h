// The process's flight recorder: PyTorch's own (c10d/FlightRecorder.hpp), as
// ProcessGroupNCCL keeps one. A ring of the last TORCH_FR_BUFFER_SIZE (2000 by
// default; 0 turns it off) collectives and point-to-point ops of every native
// group: group, sequence numbers, sizes, dtypes, state and the Python stack
// that issued them, dumped in PyTorch's format for its analyser
// (python -m torch.distributed.flight_recorder.fr_trace DIR).
//
// torch keeps its own instance inside libtorch, unexported, so core builds one
// from the same template. Its "events" are CollectiveProgress flags that the
// watchdog sets when it sees a collective finish: reading a recorded op's state
// makes no device call, so a dump never waits on a device that may be hung.
#pragma once

#include <ATen/core/Tensor.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace torch_backend {
class DeviceCollectives;
}

namespace torch_backend::distributed {

// Whether a recorded op finished, as the flight recorder reads it.
class CollectiveProgress {
 public:
  void finish() { finished_.store(true, std::memory_order_release); }
  bool query() const { return finished_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> finished_{false};
};

// A group as the dumps name it: its name (c10d's group uid, "0" for the
// default group) and description ("default_pg").
using GroupName = std::tuple<std::string, std::string>;

struct RecordedOp {
  std::size_t group_id;  // the group's number in this process
  GroupName group;
  // Ops issued by the group so far, this one included: collectives and
  // point-to-point ops counted apart, and both together (op_seq).
  std::size_t collective_seq;
  std::size_t p2p_seq;
  std::size_t op_seq;
  std::string profiling_name;  // profiling_name() below
  bool point_to_point;
  std::chrono::milliseconds timeout;
};

// "<library>:<op>" as NCCL's entries read ("nccl:all_reduce", "hccl:send
// 0->1"): the library's flight_recorder_name(), and NCCL's name of the op
// where core's differs. `rank` and `peer` (group ranks) name a send's or
// receive's direction.
std::string profiling_name(DeviceCollectives& library, const std::string& op,
                           int rank, int peer);

// Records `op` as enqueued, its state read from `progress`. Returns its entry's
// id (none while the recorder is off).
std::optional<std::size_t> record_op(
    const RecordedOp& op, const std::vector<at::Tensor>& inputs,
    const std::vector<at::Tensor>& outputs,
    std::shared_ptr<CollectiveProgress> progress);
// The watchdog no longer watches the entry's op (it finished or failed).
void retire_op(std::optional<std::size_t> id);
// A group's members by global rank, for the dump's pg_config.
void record_group_ranks(const GroupName& group,
                        std::vector<std::uint64_t> global_ranks);

// The dump: a pickled dict in PyTorch's flight-recorder format.
std::string dump_flight_recorder(bool include_collectives,
                                 bool include_stack_traces, bool only_active);
// Writes the dump through PyTorch's DebugInfoWriter: the writer registered
// with torch, else the file <TORCH_FR_DUMP_TEMP_FILE><global_rank>
// (/tmp/nccl_trace_rank_<rank> by default). Python stacks follow
// TORCH_INCLUDE_STACK_TRACE (on by default). False, with a warning on stderr,
// if it failed: a dump is diagnosis and never fails its caller.
bool write_flight_recorder(int global_rank) noexcept;
// Whether groups dump when they fail: TORCH_FR_DUMP_ON_TIMEOUT (or
// TORCH_NCCL_DUMP_ON_TIMEOUT), on by default while the recorder records.
bool dumps_on_failure();
// How long a failing rank waits for the group's dumps before it publishes
// the failure (TORCH_FR_WAIT_TIMEOUT_DUMP_MILSEC, 15 s by default).
int dump_wait_ms();

}  // namespace torch_backend::distributed
