// Internal: torch_backend._C's graph bindings (torch.<device>.graphs).
#pragma once

#include <pybind11/pybind11.h>

namespace torch_backend {

// _Graph (DeviceGraph), _graph_pool_handle, _is_current_stream_capturing.
void bind_graphs(pybind11::module_& m);

}  // namespace torch_backend
