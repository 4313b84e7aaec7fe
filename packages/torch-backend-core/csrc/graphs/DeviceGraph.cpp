#include "DeviceGraph.h"

#include <atomic>
#include <fstream>

#include <c10/core/DeviceGuard.h>
#include <c10/core/DeviceType.h>
#include <c10/util/Exception.h>

#include <torch_backend/Runtime.h>

#include "../aten/GraphRandom.h"
#include "../memory/GraphPools.h"
#include "../runtime/Capture.h"
#include "../runtime/Streams.h"

namespace torch_backend {
namespace {

// Pool ids, as CUDA's: a graph's own pool is {id, 0}, a handle {0, id}.
std::atomic<c10::CaptureId_t> next_pool_id{1};

std::string backend() { return c10::get_privateuse1_backend(); }

}  // namespace

c10::MempoolId_t graph_pool_handle() { return {0, next_pool_id++}; }

DeviceGraph::DeviceGraph(bool keep_graph) : keep_graph_(keep_graph) {}

DeviceGraph::~DeviceGraph() {
  // Dropped mid-capture (an exception unwound past it): end the capture so
  // the stream works again, keeping nothing.
  if (capture_stream_) {
    abandon_capture();
  }
  try {
    reset();
  } catch (...) {  // NOLINT(bugprone-empty-catch)
  }
}

void DeviceGraph::release_capture_state() noexcept {
  capture_stream_.reset();
  set_capturing_seeds(device_.index(), nullptr);
  try {
    end_allocate_to_pool(device_.index());
  } catch (...) {  // NOLINT(bugprone-empty-catch): the device is gone
  }
}

void DeviceGraph::abandon_capture() noexcept {
  const c10::Stream stream = *capture_stream_;
  release_capture_state();
  try {
    c10::DeviceGuard guard(device_);
    (void)active_runtime().graph_destroy(end_capture(stream));
  } catch (...) {  // NOLINT(bugprone-empty-catch): what failed was the capture
  }
}

void DeviceGraph::capture_begin(c10::MempoolId_t pool, CaptureMode mode) {
  TORCH_CHECK(!capture_stream_, "this ", backend(),
              " graph is already capturing");
  TORCH_CHECK(graph_ == nullptr, "this ", backend(),
              " graph already holds a capture: call reset() before capturing "
              "again");
  const c10::DeviceIndex device = current_device_index();
  const c10::Stream stream = current_stream(device);
  TORCH_CHECK(stream.id() != 0, backend(),
              " graphs must be captured on a stream other than the device's "
              "default stream (as CUDA's): capture under `with torch.",
              backend(),
              ".graph(g)`, which uses a side stream, or under "
              "`with torch.",
              backend(), ".stream(s)`");
  device_ = stream.device();
  pool_ = (pool.first != 0 || pool.second != 0)
              ? pool
              : c10::MempoolId_t{next_pool_id++, 0};
  begin_allocate_to_pool(device, pool_);
  holds_pool_ = true;
  try {
    begin_capture(stream, mode);
  } catch (...) {
    end_allocate_to_pool(device);
    release_pool(device, pool_);
    holds_pool_ = false;
    throw;
  }
  capture_stream_ = stream;
  try {
    seeds_ = std::make_unique<CapturedSeeds>(device_);
  } catch (...) {
    abandon_capture();
    reset();
    throw;
  }
  set_capturing_seeds(device, seeds_.get());
}

void DeviceGraph::capture_end() {
  TORCH_CHECK(capture_stream_, "capture_end() on a ", backend(),
              " graph that is not capturing");
  c10::DeviceGuard guard(device_);
  const c10::Stream stream = *capture_stream_;
  release_capture_state();
  try {
    graph_ = end_capture(stream);
  } catch (...) {
    reset();  // nothing captured is kept: the pool's memory goes back
    throw;
  }
  description_ = backend() + " graph captured on " + device_.str() +
                 " stream " + std::to_string(stream.id()) + ", memory pool (" +
                 std::to_string(pool_.first) + ", " +
                 std::to_string(pool_.second) + ")";
  if (!keep_graph_) {
    instantiate();
  }
}

void DeviceGraph::instantiate() {
  TORCH_CHECK(graph_ != nullptr, "this ", backend(),
              " graph holds no capture to instantiate");
  if (!instantiated_) {
    c10::DeviceGuard guard(device_);
    TORCH_BACKEND_CHECK(active_runtime().graph_instantiate(graph_));
    instantiated_ = true;
  }
}

void DeviceGraph::replay() {
  TORCH_CHECK(graph_ != nullptr, "replay() of a ", backend(),
              " graph that holds no capture (capture one first; reset() "
              "frees it)");
  instantiate();
  c10::DeviceGuard guard(device_);
  if (seeds_) {
    seeds_->refill();  // on the current stream, before the launch there
  }
  TORCH_BACKEND_CHECK(active_runtime().graph_launch(
      graph_, native_stream(current_stream(device_.index()))));
}

void DeviceGraph::reset() {
  TORCH_CHECK(!capture_stream_, "reset() of a ", backend(),
              " graph while it is capturing: end the capture first");
  if (graph_ != nullptr) {
    c10::DeviceGuard guard(device_);
    GraphHandle graph = graph_;
    graph_ = nullptr;
    instantiated_ = false;
    TORCH_BACKEND_CHECK(active_runtime().graph_destroy(graph));
  }
  seeds_.reset();
  if (holds_pool_) {
    holds_pool_ = false;
    release_pool(device_.index(), pool_);
  }
}

c10::MempoolId_t DeviceGraph::pool() const { return pool_; }

void DeviceGraph::enable_debug_mode() { debug_ = true; }

void DeviceGraph::debug_dump(const std::string& path) {
  TORCH_CHECK(debug_, "call enable_debug_mode() before debug_dump()");
  TORCH_CHECK(graph_ != nullptr, "this ", backend(),
              " graph holds no capture to dump");
  std::ofstream out(path);
  TORCH_CHECK(out, "cannot write ", path);
  out << description_ << "\n";
}

}  // namespace torch_backend
