// The active device runtime of this process and the calls core makes into it.
#pragma once

#include <string>
#include <vector>

#include <c10/core/Device.h>

#include <torch_backend/DeviceRuntime.h>

namespace torch_backend {

class DeviceCollectives;

// Loads a device library (dlopen) and returns its runtime without making it
// active. Throws c10::Error naming the library and the reason on failure.
TORCH_BACKEND_API DeviceRuntime* load_device_library(const std::string& path);
// The library's optional kernel registration (TORCH_BACKEND_DEFINE_KERNELS)
// for a runtime it returned, or nullptr.
TORCH_BACKEND_API void* kernel_registrar_of(const DeviceRuntime* runtime);
// Another exported symbol of the library that returned `runtime`, or nullptr.
TORCH_BACKEND_API void* device_library_symbol(const DeviceRuntime* runtime,
                                              const char* name);

// The active runtime's library's collectives (DeviceCollectives.h), or
// nullptr where it exports none. Throws c10::Error if they were built for
// another ABI version, or if no runtime is active.
TORCH_BACKEND_API DeviceCollectives* active_collectives();

// Makes `runtime` the process's device runtime. Allowed once per process,
// like PyTorch's PrivateUse1 registration; a second call throws.
TORCH_BACKEND_API void set_active_runtime(DeviceRuntime* runtime);
TORCH_BACKEND_API bool has_active_runtime();
// Throws c10::Error if no runtime is active, or in a child forked after the
// runtime was first used (its threads and contexts did not survive the fork).
// The first call marks the runtime initialized.
TORCH_BACKEND_API DeviceRuntime& active_runtime();
TORCH_BACKEND_API bool is_initialized();
// The active runtime's capabilities (does not count as a use of it).
TORCH_BACKEND_API Capabilities active_capabilities();
TORCH_BACKEND_API bool in_bad_fork();

// Throws a c10::Error (c10::OutOfMemoryError for OOM codes) carrying the
// runtime's error text if `status` is not kSuccess.
TORCH_BACKEND_API void check_status(Status status, const char* call);

// Device count, cached after the first successful query (devices do not come
// and go within a process). Returns 0 if no runtime is active.
TORCH_BACKEND_API int device_count();
// The calling thread's current device. Core is the only caller of the
// runtime's get/set_device, so it keeps a per-thread copy: reading the current
// device is on every allocation's path.
TORCH_BACKEND_API int current_device();
// Checks the index, then sets the runtime's and core's current device.
TORCH_BACKEND_API void set_current_device(int device);
TORCH_BACKEND_API void set_current_device_unchecked(int device) noexcept;

// Throws c10::Error (RuntimeError, as for CUDA) if `device` is not a valid
// index.
TORCH_BACKEND_API void check_device_index(int device);

// Devices this process has used: made current on any thread (every
// allocation, stream and kernel happens on a current device). Indices < 64.
TORCH_BACKEND_API std::vector<int> used_devices();
// Waits for the work enqueued on every used device (synchronize_device on
// each). Reports a failure on stderr instead of throwing: it runs at exit.
// Does nothing if the runtime was never used or in a forked child.
TORCH_BACKEND_API void synchronize_used_devices() noexcept;

// Waits until the current stream of `device` has finished its enqueued work,
// so that host code sees every earlier write (host-addressable memory). Call
// before host computation on device memory.
TORCH_BACKEND_API void wait_for_host_access(c10::Device device);

}  // namespace torch_backend

#define TORCH_BACKEND_CHECK(call) ::torch_backend::check_status((call), #call)
