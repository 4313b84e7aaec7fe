// PyTorch's flight-recorder template instantiated for core's native groups.
// Its header formats messages with fmt, which libtorch does not export: fmt is
// used header-only in this one file.
#define FMT_HEADER_ONLY
#include "FlightRecorder.h"

#include <torch/csrc/distributed/c10d/FlightRecorderDetail.hpp>

#include <torch_backend/DeviceCollectives.h>

#include <cctype>
#include <cstdio>
#include <map>
#include <mutex>

namespace torch_backend::distributed {
namespace {
using Recorder = c10d::FlightRecorder<CollectiveProgress>;
}  // namespace
}  // namespace torch_backend::distributed

namespace c10d {
// Called for entries that have both a start and an end: core records no
// start (the device's start of a collective is not observed), so never.
template <>
float getDurationFromEvent<torch_backend::distributed::CollectiveProgress>(
    torch_backend::distributed::CollectiveProgress& /*start*/,
    torch_backend::distributed::CollectiveProgress& /*end*/) {
  return -1.0F;
}
template struct FlightRecorder<torch_backend::distributed::CollectiveProgress>;
}  // namespace c10d

namespace torch_backend::distributed {
namespace {

// An entry holds its progress by raw pointer, read by a dump after the
// recorder's own lock is released; the progress each slot's entry reads stays
// here until a newer op takes the slot, and the swap waits for running dumps.
// Core never resets the recorder, so the entry with id i is in slot
// i % max_entries.
struct KeptProgress {
  std::mutex mutex;
  std::vector<std::shared_ptr<CollectiveProgress>> slots;
};

KeptProgress& kept() {
  static auto* kept = new KeptProgress();  // never destroyed: used at exit
  return *kept;
}

// NCCL's names for the ops whose core names differ (the Python API's).
std::string nccl_op_name(const std::string& op) {
  static const std::map<std::string, std::string> renamed = {
      {"all_gather_into_tensor", "_all_gather_base"},
      {"reduce_scatter_tensor", "_reduce_scatter_base"},
      {"all_reduce_coalesced", "allreduce_coalesced"},
  };
  const auto found = renamed.find(op);
  return found == renamed.end() ? op : found->second;
}

}  // namespace

std::string profiling_name(DeviceCollectives& library, const std::string& op,
                           int rank, int peer) {
  std::string prefix;
  if (const char* name = library.flight_recorder_name()) {
    prefix = name;
  } else {
    for (const char c : std::string(library.library_name())) {
      prefix += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  std::string name = prefix + ":" + nccl_op_name(op);
  if (op == "send") {
    name += " " + std::to_string(rank) + "->" + std::to_string(peer);
  } else if (op == "recv") {
    name += " " + std::to_string(rank) + "<-" + std::to_string(peer);
  }
  return name;
}

std::optional<std::size_t> record_op(
    const RecordedOp& op, const std::vector<at::Tensor>& inputs,
    const std::vector<at::Tensor>& outputs,
    std::shared_ptr<CollectiveProgress> progress) {
  Recorder& recorder = *Recorder::get();
  if (!recorder.enabled_) {
    return std::nullopt;
  }
  // The group's status (last enqueued, started, completed) is NCCL's
  // watchdog's bookkeeping; the entries carry the same facts here.
  static const auto no_status = std::make_shared<c10d::ProcessGroupStatus>();
  const std::optional<std::size_t> id = recorder.record(
      op.group_id, op.group, op.collective_seq, op.p2p_seq, op.op_seq,
      op.profiling_name, inputs, outputs, /*start=*/nullptr, progress.get(),
      op.timeout, no_status, op.point_to_point);
  if (id) {
    KeptProgress& keep = kept();
    std::lock_guard<std::mutex> lock(keep.mutex);
    keep.slots.resize(recorder.max_entries_);
    keep.slots[*id % recorder.max_entries_] = std::move(progress);
  }
  return id;
}

void retire_op(std::optional<std::size_t> id) {
  Recorder::get()->retire_id(id, /*compute_duration=*/false);
}

void record_group_ranks(const GroupName& group,
                        std::vector<std::uint64_t> global_ranks) {
  Recorder::get()->record_pg_ranks(group, std::move(global_ranks));
}

std::string dump_flight_recorder(bool include_collectives,
                                 bool include_stack_traces, bool only_active) {
  std::lock_guard<std::mutex> lock(kept().mutex);
  return Recorder::get()->dump(std::nullopt, include_collectives,
                               include_stack_traces, only_active);
}

bool write_flight_recorder(int global_rank) noexcept {
  try {
    const std::string dump = dump_flight_recorder(
        /*include_collectives=*/true,
        c10d::getCvarBool(c10d::TORCH_INCLUDE_STACK_TRACE, true),
        c10d::getCvarBool(c10d::TORCH_INCLUDE_ONLY_ACTIVE, false));
    c10d::DebugInfoWriter::getWriter(global_rank).write(dump);
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "torch_backend: the flight recorder's dump failed: %s\n",
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "torch_backend: the flight recorder's dump failed\n");
  }
  return false;
}

bool dumps_on_failure() {
  return Recorder::get()->enabled_ &&
         c10d::getCvarBool(
             {"TORCH_FR_DUMP_ON_TIMEOUT", "TORCH_NCCL_DUMP_ON_TIMEOUT"}, true);
}

int dump_wait_ms() {
  return c10d::getCvarInt({"TORCH_FR_WAIT_TIMEOUT_DUMP_MILSEC",
                           "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC"},
                          15000);
}

}  // namespace torch_backend::distributed
