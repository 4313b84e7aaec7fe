// torch_backend._distributed: builds the c10d backends, the staged one around
// a Gloo backend made in Python and the native one over the device library's
// collectives (with a Python factory of Gloo backends for CPU tensors). Kept
// apart from _C so that importing torch_backend never loads c10d glue that a
// single-process user does not need.
#include <Python.h>
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <torch_backend/Runtime.h>

#include "../distributed/FlightRecorder.h"
#include "../distributed/NativeBackend.h"
#include "../distributed/StagedBackend.h"
#include "../distributed/Watchdog.h"

namespace py = pybind11;

// c10d's types are bound with this holder (as torch/csrc/utils/pybind.h
// declares it, a header too heavy for this module).
PYBIND11_DECLARE_HOLDER_TYPE(T, c10::intrusive_ptr<T>, true)

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

// `make_gloo(store, rank, size, timeout)`, a Python callable, as the native
// backend's factory of Gloo backends (one per group, split groups included).
NativeBackend::CpuBackendFactory gloo_factory(py::object make_gloo) {
  if (make_gloo.is_none()) {
    return {};
  }
  // Released with the GIL; leaked if the interpreter is already gone.
  std::shared_ptr<py::object> held(new py::object(std::move(make_gloo)),
                                   [](py::object* callable) {
                                     if (Py_IsInitialized()) {
                                       py::gil_scoped_acquire gil;
                                       delete callable;
                                     } else {
                                       callable->release();
                                       delete callable;
                                     }
                                   });
  return [held](const c10::intrusive_ptr<c10d::Store>& store, int rank,
                int size, std::chrono::milliseconds timeout) {
    py::gil_scoped_acquire gil;
    // The store goes with its holder: Python shares it (a raw pointer would
    // make pybind11 build a second owner).
    // The timeout crosses as a datetime.timedelta (pybind11's chrono caster).
    py::object made = (*held)(py::cast(store), rank, size, timeout);
    auto* backend = made.cast<c10d::Backend*>();
    TORCH_CHECK_TYPE(backend != nullptr, "make_gloo returned None");
    return c10::intrusive_ptr<c10d::Backend>::reclaim_copy(backend);
  };
}

c10d::Backend* make_native_backend(c10d::Store* store, int rank, int size,
                                   std::vector<std::uint64_t> global_ranks,
                                   py::object make_gloo,
                                   const std::string& name,
                                   std::chrono::milliseconds timeout,
                                   bool end_process_on_error) {
  TORCH_CHECK_TYPE(store != nullptr, "expected a store, got None");
  DeviceCollectives* library = active_collectives();
  TORCH_CHECK(library != nullptr,
              "the active device library has no collectives");
  NativeBackend::CpuBackendFactory factory;
  {
    py::gil_scoped_acquire gil;  // the callable's references
    factory = gloo_factory(std::move(make_gloo));
  }
  auto native = c10::make_intrusive<NativeBackend>(
      c10::intrusive_ptr<c10d::Store>::reclaim_copy(store), rank, size,
      std::move(global_ranks), *library, std::move(factory), name, timeout,
      end_process_on_error);
  return native.release();
}

std::string collectives_library_name() {
  DeviceCollectives* library = active_collectives();
  return library == nullptr ? std::string() : library->library_name();
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
  m.def("drain_watchdogs", &torch_backend::distributed::drain_all_watchdogs,
        py::call_guard<py::gil_scoped_release>());
  m.def("collectives_library_name",
        &torch_backend::distributed::collectives_library_name);
  // The flight recorder's dump (a pickle), as torch's _dump_fr_trace gives
  // its own; symbolising Python stacks takes the GIL itself.
  m.def(
      "dump_flight_recorder",
      [](bool include_collectives, bool include_stack_traces,
         bool only_active) {
        std::string dump;
        {
          py::gil_scoped_release no_gil;
          dump = torch_backend::distributed::dump_flight_recorder(
              include_collectives, include_stack_traces, only_active);
        }
        return py::bytes(dump);
      },
      py::arg("include_collectives") = true,
      py::arg("include_stack_traces") = true, py::arg("only_active") = false);
  // The native backend's Python type (a c10d Backend) adds what
  // torch.distributed.split_group reads: its options, which it deep-copies.
  using torch_backend::distributed::NativeBackend;
  using torch_backend::distributed::NativeBackendOptions;
  py::class_<NativeBackendOptions, c10d::Backend::Options,
             c10::intrusive_ptr<NativeBackendOptions>>(m,
                                                       "NativeBackendOptions")
      .def("__deepcopy__",
           [](const NativeBackendOptions& self, const py::dict& /*memo*/) {
             return c10::make_intrusive<NativeBackendOptions>(self);
           });
  // Destroyed without the GIL, as PyTorch's own process groups are: its
  // Gloo backend's destructor waits for Gloo's worker threads, which may be
  // freeing Python-owned tensors of finished work (broadcast_object_list's)
  // and need the GIL (a deadlock in destroy_process_group otherwise).
  py::class_<NativeBackend, c10d::Backend, c10::intrusive_ptr<NativeBackend>>(
      m, "NativeBackend", py::release_gil_before_calling_cpp_dtor())
      .def_property_readonly("options", &NativeBackend::getBackendOptions)
      // torch 2.11's new_group calls this on the ranks a new group leaves out
      // when the default group is bound to a device: NCCL's ncclCommSplit
      // needs every rank of the parent. A native group's communicators come
      // from fresh ids made by its members alone: nothing to do.
      .def("perform_nocolor_split",
           [](NativeBackend& /*self*/, const py::object& /*device*/) {});
  m.def("make_native_backend", &torch_backend::distributed::make_native_backend,
        py::arg("store"), py::arg("rank"), py::arg("size"),
        py::arg("global_ranks"), py::arg("make_gloo"), py::arg("name"),
        py::arg("timeout"), py::arg("end_process_on_error"),
        py::return_value_policy::take_ownership,
        py::call_guard<py::gil_scoped_release>());
}
