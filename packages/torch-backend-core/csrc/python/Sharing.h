// Internal: device memory shared between processes (Sharing.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace torch_backend {

// Adds _share_storage and _open_shared to torch_backend._C.
void bind_sharing(pybind11::module_& m);

}  // namespace torch_backend
