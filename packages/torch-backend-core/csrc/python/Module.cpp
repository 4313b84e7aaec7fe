// torch_backend._C: the thin Python glue over core. Plain values cross this
// boundary (ints, strings), so only pybind11 itself is needed here.
#include <Python.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <torch_backend/Activate.h>
#include <torch_backend/Runtime.h>

namespace py = pybind11;

namespace torch_backend {
namespace {

// Loaded but not yet active: probing a library must not touch PyTorch.
DeviceRuntime* g_loaded = nullptr;

void load(const std::string& path) { g_loaded = load_device_library(path); }

// Devices the loaded (not yet active) library reports, so that a backend with
// no hardware is never activated.
int loaded_device_count() {
  TORCH_CHECK(g_loaded != nullptr, "no device library has been loaded");
  int count = 0;
  const Status status = g_loaded->device_count(&count);
  TORCH_CHECK(status == kSuccess,
              "device_count failed: ", g_loaded->error_text(status));
  return count;
}

void activate_loaded() {
  TORCH_CHECK(g_loaded != nullptr, "no device library has been loaded");
  activate(g_loaded);
}

int current_device() {
  int device = 0;
  TORCH_BACKEND_CHECK(active_runtime().get_device(&device));
  return device;
}

void set_device(int device) {
  check_device_index(device);
  TORCH_BACKEND_CHECK(active_runtime().set_device(device));
}

void synchronize(int device) {
  c10::DeviceGuard guard(
      {c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)});
  TORCH_BACKEND_CHECK(active_runtime().synchronize_device());
}

py::dict device_properties(int device) {
  check_device_index(device);
  DeviceProperties props;
  TORCH_BACKEND_CHECK(active_runtime().device_properties(device, &props));
  py::dict out;
  out["name"] = props.name;
  out["total_memory"] = props.total_memory;
  out["capability"] = props.capability;
  return out;
}

std::pair<size_t, size_t> mem_get_info(int device) {
  c10::DeviceGuard guard(
      {c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)});
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  TORCH_BACKEND_CHECK(active_runtime().mem_get_info(&free_bytes, &total_bytes));
  return {free_bytes, total_bytes};
}

// Same Python exception types PyTorch raises for these c10 errors.
void translate_c10_errors(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const c10::OutOfMemoryError& e) {
    py::object oom = py::module_::import("torch").attr("OutOfMemoryError");
    PyErr_SetString(oom.ptr(), e.what_without_backtrace());
  } catch (const c10::IndexError& e) {
    PyErr_SetString(PyExc_IndexError, e.what_without_backtrace());
  } catch (const c10::ValueError& e) {
    PyErr_SetString(PyExc_ValueError, e.what_without_backtrace());
  } catch (const c10::Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
  }
}

}  // namespace
}  // namespace torch_backend

PYBIND11_MODULE(_C, m) {
  using namespace torch_backend;
  py::register_exception_translator(&translate_c10_errors);
  m.def("_load_device_library", &load, py::arg("path"));
  m.def("_loaded_device_count", &loaded_device_count);
  m.def("_activate", &activate_loaded);
  m.def("_is_active", &has_active_runtime);
  m.def("device_count", [] { return torch_backend::device_count(); });
  m.def("current_device", &current_device);
  m.def("set_device", &set_device, py::arg("device"));
  m.def("synchronize", &synchronize, py::arg("device"));
  m.def("device_properties", &device_properties, py::arg("device"));
  m.def("mem_get_info", &mem_get_info, py::arg("device"));
}
