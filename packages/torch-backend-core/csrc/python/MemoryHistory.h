// Internal: torch.<device>.memory's history and snapshot (MemoryHistory.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace torch_backend {

// Adds _record_memory_history and _memory_snapshot to torch_backend._C.
void bind_memory_history(pybind11::module_& m);

}  // namespace torch_backend
