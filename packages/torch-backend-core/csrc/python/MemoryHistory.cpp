// The allocator's history with Python stack traces, in the dictionary format
// of torch.cuda.memory._snapshot(), which PyTorch's memory visualiser reads.
#include "MemoryHistory.h"

#include <torch/csrc/profiler/combined_traceback.h>

#include <string>
#include <vector>

#include <torch_backend/Allocator.h>

namespace py = pybind11;

namespace torch_backend {
namespace {

const char* action_name(MemoryTraceEntry::Action action) {
  switch (action) {
    case MemoryTraceEntry::Action::Alloc:
      return "alloc";
    case MemoryTraceEntry::Action::FreeRequested:
      return "free_requested";
    case MemoryTraceEntry::Action::FreeCompleted:
      return "free_completed";
    case MemoryTraceEntry::Action::SegmentAlloc:
      return "segment_alloc";
    case MemoryTraceEntry::Action::SegmentFree:
      return "segment_free";
    case MemoryTraceEntry::Action::SegmentMap:
      return "segment_map";
    case MemoryTraceEntry::Action::SegmentUnmap:
      return "segment_unmap";
    case MemoryTraceEntry::Action::Oom:
      return "oom";
  }
  return "unknown";
}

const char* state_name(MemoryBlockInfo::State state) {
  switch (state) {
    case MemoryBlockInfo::State::ActiveAllocated:
      return "active_allocated";
    case MemoryBlockInfo::State::ActiveAwaitingFree:
      return "active_awaiting_free";
    case MemoryBlockInfo::State::Inactive:
      return "inactive";
  }
  return "inactive";
}

// Stack traces, symbolized together (shared frames are resolved once).
class Frames {
 public:
  // Index of `context`'s frames in the list to symbolize; -1 for none.
  int add(const AllocationContext& context) {
    if (!context) {
      return -1;
    }
    tracebacks_.push_back(
        static_cast<torch::CapturedTraceback*>(context.get()));
    return static_cast<int>(tracebacks_.size()) - 1;
  }

  // Under the GIL: Python frames are resolved through the interpreter.
  void symbolize() {
    const torch::SymbolizedTracebacks symbolized =
        torch::symbolize(tracebacks_);
    std::vector<py::dict> all_frames;
    for (const auto& frame : symbolized.all_frames) {
      py::dict out;
      out["filename"] = frame.filename;
      out["line"] = frame.lineno;
      out["name"] = frame.funcname;
      all_frames.push_back(std::move(out));
    }
    for (const auto& traceback : symbolized.tracebacks) {
      py::list frames;
      for (uint64_t index : traceback) {
        frames.append(all_frames.at(index));
      }
      symbolized_.push_back(std::move(frames));
    }
  }

  py::list of(int index) const {
    return index < 0 ? py::list() : symbolized_.at(index);
  }

 private:
  std::vector<torch::CapturedTraceback*> tracebacks_;
  std::vector<py::list> symbolized_;
};

void record_history(bool enabled, bool python_stacks, size_t max_entries) {
  AllocationContextRecorder recorder;
  if (enabled && python_stacks) {
    recorder = [] {
      return std::static_pointer_cast<void>(torch::CapturedTraceback::gather(
          /*python=*/true, /*script=*/false, /*cpp=*/false));
    };
  }
  record_memory_history(enabled, std::move(recorder), max_entries);
}

py::dict snapshot() {
  const std::vector<MemorySegmentInfo> segments = memory_segments();
  const std::vector<std::vector<MemoryTraceEntry>> traces = memory_traces();
  Frames frames;
  std::vector<std::vector<int>> block_frames;
  for (const MemorySegmentInfo& segment : segments) {
    std::vector<int>& indices = block_frames.emplace_back();
    for (const MemoryBlockInfo& block : segment.blocks) {
      indices.push_back(frames.add(block.context));
    }
  }
  std::vector<std::vector<int>> trace_frames;
  for (const auto& trace : traces) {
    std::vector<int>& indices = trace_frames.emplace_back();
    for (const MemoryTraceEntry& entry : trace) {
      indices.push_back(frames.add(entry.context));
    }
  }
  frames.symbolize();

  py::list segment_list;
  for (size_t s = 0; s < segments.size(); ++s) {
    const MemorySegmentInfo& segment = segments[s];
    py::dict out;
    size_t allocated = 0;
    size_t active = 0;
    size_t requested = 0;
    py::list blocks;
    for (size_t b = 0; b < segment.blocks.size(); ++b) {
      const MemoryBlockInfo& block = segment.blocks[b];
      if (block.state == MemoryBlockInfo::State::ActiveAllocated) {
        allocated += block.size;
        requested += block.requested_size;
      }
      if (block.state != MemoryBlockInfo::State::Inactive) {
        active += block.size;
      }
      py::dict info;
      info["address"] = block.address;
      info["size"] = block.size;
      info["requested_size"] = block.requested_size;
      info["state"] = state_name(block.state);
      info["frames"] = frames.of(block_frames[s][b]);
      blocks.append(std::move(info));
    }
    out["device"] = segment.device;
    out["address"] = segment.address;
    out["total_size"] = segment.total_size;
    out["allocated_size"] = allocated;
    out["active_size"] = active;
    out["requested_size"] = requested;
    out["stream"] = segment.stream;
    out["segment_type"] = segment.is_large ? "large" : "small";
    out["segment_pool_id"] = py::make_tuple(0, 0);
    out["is_expandable"] = segment.is_expandable;
    out["frames"] = py::list();
    out["blocks"] = std::move(blocks);
    segment_list.append(std::move(out));
  }

  py::list device_traces;
  for (size_t d = 0; d < traces.size(); ++d) {
    py::list trace;
    for (size_t e = 0; e < traces[d].size(); ++e) {
      const MemoryTraceEntry& entry = traces[d][e];
      py::dict out;
      out["action"] = action_name(entry.action);
      out["addr"] = entry.address;
      out["size"] = entry.size;
      out["stream"] = entry.stream;
      out["time_us"] = entry.time_us;
      out["frames"] = frames.of(trace_frames[d][e]);
      trace.append(std::move(out));
    }
    device_traces.append(std::move(trace));
  }

  py::dict result;
  result["segments"] = std::move(segment_list);
  result["device_traces"] = std::move(device_traces);
  result["allocator_settings"] = py::dict();
  result["external_annotations"] = py::list();
  return result;
}

}  // namespace

void bind_memory_history(py::module_& m) {
  m.def("_record_memory_history", &record_history, py::arg("enabled"),
        py::arg("python_stacks"), py::arg("max_entries"));
  m.def("_memory_snapshot", &snapshot);
}

}  // namespace torch_backend
