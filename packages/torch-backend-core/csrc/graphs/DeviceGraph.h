// Graph capture and replay for every backend whose runtime can capture
// (DeviceRuntime's capture symbols): what torch.<device>.Graph and, on torch
// >= 2.12, torch.accelerator.Graph drive. Semantics of torch.cuda.CUDAGraph:
// capture on a side stream of the current device into a private memory pool
// (shared with other graphs when given one), replay on the current stream,
// reset to free the graph and let go of the pool.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <c10/core/Allocator.h>
#include <c10/core/Stream.h>

#include <torch_backend/DeviceRuntime.h>

namespace torch_backend {

class CapturedSeeds;

// A fresh pool id for graphs to share (torch.<device>.graph_pool_handle()).
c10::MempoolId_t graph_pool_handle();

class DeviceGraph {
 public:
  // keep_graph: capture_end leaves the graph to instantiate() (or the first
  // replay) instead of instantiating it at once.
  explicit DeviceGraph(bool keep_graph = false);
  ~DeviceGraph();
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;

  // Begins capturing the current stream of the current device, which must
  // not be its default stream. pool {0, 0}: a pool of its own.
  void capture_begin(c10::MempoolId_t pool = {0, 0},
                     CaptureMode mode = CaptureMode::Global);
  // Ends it; raises (with nothing kept) if a refused call invalidated it.
  void capture_end();
  void instantiate();
  // Launches the graph on the current stream of its device.
  void replay();
  // Frees the graph and lets go of its pool; the object may capture again.
  void reset();
  c10::MempoolId_t pool() const;
  // Debug mode keeps a description of the capture for debug_dump.
  void enable_debug_mode();
  void debug_dump(const std::string& path);

 private:
  void release_capture_state() noexcept;
  // Ends the capture in progress keeping nothing, errors swallowed: for an
  // exception (or a destructor) already on its way.
  void abandon_capture() noexcept;

  const bool keep_graph_;
  bool debug_ = false;
  std::optional<c10::Stream> capture_stream_;  // while capturing
  c10::Device device_{c10::DeviceType::PrivateUse1, 0};
  c10::MempoolId_t pool_{0, 0};
  bool holds_pool_ = false;
  GraphHandle graph_ = nullptr;
  bool instantiated_ = false;
  std::unique_ptr<CapturedSeeds> seeds_;
  std::string description_;  // for debug_dump
};

}  // namespace torch_backend
