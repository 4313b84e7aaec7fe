// What core does at interpreter exit, before finalisation begins (an atexit
// handler registered at activation; see "Shutdown contract" in
// DeviceRuntime.h).
//
// Why: PyTorch's autograd engine runs the backward of device tensors on one
// worker thread per device index ("pt_autograd_<d>"). backward() returns to
// the caller as soon as the graph task is marked complete, but the worker
// still holds the finished task and drops it a moment later. Dropping it can
// release the last reference to a tensor owned by a Python object, which
// takes the GIL. If the interpreter is finalising by then, Python ends the
// thread with pthread_exit; the forced unwind crosses a noexcept destructor
// and the process aborts ("terminate called without an active exception",
// status 134) after the script itself succeeded. CPU-only processes never
// see this: their backward runs on the calling thread.
//
// The fix: with the GIL released, wait for the device work already enqueued,
// then push a tiny backward through each used device's autograd thread. That
// thread runs its tasks in order, so when this barrier completes, the earlier
// tasks were dropped, with the GIL available to them. The barrier itself
// holds no Python objects, so dropping it later needs no GIL.
#include "Shutdown.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <c10/core/InferenceMode.h>
#include <pybind11/pybind11.h>

#include <torch_backend/Runtime.h>

namespace torch_backend {
namespace {

// Device indices whose autograd worker thread exists. The engine starts them
// on the first backward that involves a device; a barrier must not start
// them at exit (that would initialise every device of an inference script).
std::vector<int> autograd_worker_devices() {
  std::vector<int> devices;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) {
    return devices;
  }
  const std::string prefix = "pt_autograd_";
  while (dirent* entry = readdir(tasks)) {
    std::ifstream comm(std::string("/proc/self/task/") + entry->d_name +
                       "/comm");
    std::string name;
    if (std::getline(comm, name) && name.rfind(prefix, 0) == 0) {
      try {
        devices.push_back(std::stoi(name.substr(prefix.size())));
      } catch (const std::exception&) {
        // a thread of another name shape: not an engine worker
      }
    }
  }
  closedir(tasks);
  return devices;
}

void autograd_barrier(int device) {
  c10::InferenceMode inference_off(false);
  at::AutoGradMode grad_on(true);
  const auto options = at::TensorOptions()
                           .dtype(at::kFloat)
                           .device(c10::DeviceType::PrivateUse1,
                                   static_cast<c10::DeviceIndex>(device));
  at::Tensor leaf = at::empty({1}, options).fill_(1.0).requires_grad_(true);
  leaf.sum().backward();
}

}  // namespace

void prepare_for_exit() {
  if (!is_initialized() || in_bad_fork()) {
    return;  // nothing ran on the device, or its threads did not survive a fork
  }
  pybind11::gil_scoped_release no_gil;
  synchronize_used_devices();
  const std::vector<int> workers = autograd_worker_devices();
  for (int device : used_devices()) {
    if (std::find(workers.begin(), workers.end(), device) == workers.end()) {
      continue;
    }
    try {
      autograd_barrier(device);
    } catch (const c10::Error& e) {
      std::fprintf(stderr,
                   "torch-backend: autograd barrier on device %d at exit: %s\n",
                   device, e.what_without_backtrace());
    }
  }
}

}  // namespace torch_backend
