#include "Graphs.h"

#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <utility>

#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include "../graphs/DeviceGraph.h"
#include "../runtime/Capture.h"
#include "../runtime/Streams.h"

namespace py = pybind11;

namespace torch_backend {
namespace {

// torch.cuda.graph's names for the modes.
CaptureMode mode_named(const std::string& name) {
  if (name == "global" || name == "default") {
    return CaptureMode::Global;
  }
  if (name == "thread_local") {
    return CaptureMode::ThreadLocal;
  }
  if (name == "relaxed") {
    return CaptureMode::Relaxed;
  }
  TORCH_CHECK_VALUE(false, "capture_error_mode must be one of 'default', ",
                    "'global', 'thread_local' or 'relaxed', not '", name, "'");
}

using PoolId = std::pair<c10::CaptureId_t, c10::CaptureId_t>;

}  // namespace

void bind_graphs(py::module_& m) {
  // Every call may wait for the runtime: without the GIL, as torch's.
  const auto no_gil = py::call_guard<py::gil_scoped_release>();
  py::class_<DeviceGraph>(m, "_Graph")
      .def(py::init<bool>(), py::arg("keep_graph") = false)
      .def(
          "capture_begin",
          [](DeviceGraph& graph, std::optional<PoolId> pool,
             const std::string& mode) {
            const CaptureMode parsed = mode_named(mode);
            py::gil_scoped_release release;
            graph.capture_begin(pool.value_or(PoolId{0, 0}), parsed);
          },
          py::arg("pool") = py::none(),
          py::arg("capture_error_mode") = "global")
      .def("capture_end", &DeviceGraph::capture_end, no_gil)
      .def("instantiate", &DeviceGraph::instantiate, no_gil)
      .def("replay", &DeviceGraph::replay, no_gil)
      .def("reset", &DeviceGraph::reset, no_gil)
      .def("pool", &DeviceGraph::pool)
      .def("enable_debug_mode", &DeviceGraph::enable_debug_mode)
      .def("debug_dump", &DeviceGraph::debug_dump, py::arg("debug_path"));
  // torch.UntypedStorage._cdata of a storage the caller holds: using its
  // memory raises `message` from now on (a replayed graph's output that a
  // later replay overwrote). Storage-wide, so views of it raise too.
  m.def("_revoke_storage_access", [](uintptr_t storage, std::string message) {
    TORCH_CHECK_VALUE(storage != 0, "expected a storage, got a null pointer");
    reinterpret_cast<c10::StorageImpl*>(storage)
        ->release_data_and_set_meta_custom_data_ptr_error_msg_(
            std::move(message));
  });
  m.def("_graph_pool_handle", &graph_pool_handle);
  m.def("_is_current_stream_capturing",
        [] { return is_capturing(current_stream(current_device_index())); });
}

}  // namespace torch_backend
