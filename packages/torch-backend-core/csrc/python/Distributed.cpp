// torch_backend._distributed: builds the staged c10d backend around a Gloo
// backend made in Python. Kept apart from _C so that importing torch_backend
// never loads c10d glue that a single-process user does not need.
#include <Python.h>
#include <pybind11/pybind11.h>

#include "../distributed/StagedBackend.h"

namespace py = pybind11;

namespace torch_backend::distributed {
namespace {

// Raw pointers cross the boundary: torch binds c10d::Backend with its own
// holder type, and a raw pointer lets pybind11 build that holder itself.
c10d::Backend* make_staged_backend(c10d::Backend* gloo, const std::string& name,
                                   bool always_pinned) {
  TORCH_CHECK_TYPE(gloo != nullptr, "expected a Gloo backend, got None");
  auto staged = c10::make_intrusive<StagedBackend>(
      c10::intrusive_ptr<c10d::Backend>::reclaim_copy(gloo), name,
      always_pinned ? StagingMode::kPinned : StagingMode::kAuto,
      [](const std::function<void()>& run) {
        if (PyGILState_Check()) {
          py::gil_scoped_release no_gil;
          run();
        } else {
          run();
        }
      });
  return staged.release();
}

}  // namespace
}  // namespace torch_backend::distributed

PYBIND11_MODULE(_distributed, m) {
  // torch.distributed registers c10d::Backend's Python type, which the
  // pointers below are converted through.
  py::module_::import("torch.distributed");
  m.def("make_staged_backend", &torch_backend::distributed::make_staged_backend,
        py::arg("gloo"), py::arg("name"), py::arg("always_pinned") = false,
        py::return_value_policy::take_ownership);
}
