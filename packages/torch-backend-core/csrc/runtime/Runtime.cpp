#include <torch_backend/Runtime.h>

#include <torch_backend/DeviceCollectives.h>

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>

#include <c10/core/DeviceType.h>
#include <c10/util/Exception.h>

namespace torch_backend {

DeviceRuntime::~DeviceRuntime() = default;

Capabilities DeviceRuntime::capabilities() { return {}; }

Status DeviceRuntime::stream_priority_range(int* least, int* greatest) {
  *least = 0;
  *greatest = 0;
  return kSuccess;
}

Status DeviceRuntime::stream_sleep(StreamHandle, unsigned long) {
  return kNotSupported;
}

Status DeviceRuntime::ipc_get_handle(void*, IpcHandle*) {
  return kNotSupported;
}

Status DeviceRuntime::ipc_open_handle(const IpcHandle&, void**) {
  return kNotSupported;
}

Status DeviceRuntime::ipc_close_handle(void*) { return kNotSupported; }

Status DeviceRuntime::vm_granularity(std::size_t*) { return kNotSupported; }
Status DeviceRuntime::vm_reserve(void**, std::size_t) { return kNotSupported; }
Status DeviceRuntime::vm_release(void*, std::size_t) { return kNotSupported; }
Status DeviceRuntime::vm_create(PhysicalHandle*, std::size_t) {
  return kNotSupported;
}
Status DeviceRuntime::vm_destroy(PhysicalHandle) { return kNotSupported; }
Status DeviceRuntime::vm_map(void*, std::size_t, PhysicalHandle) {
  return kNotSupported;
}
Status DeviceRuntime::vm_unmap(void*, std::size_t) { return kNotSupported; }
Status DeviceRuntime::capture_begin(StreamHandle, CaptureMode) {
  return kNotSupported;
}
Status DeviceRuntime::capture_end(StreamHandle, GraphHandle*) {
  return kNotSupported;
}
Status DeviceRuntime::graph_instantiate(GraphHandle) { return kSuccess; }
Status DeviceRuntime::graph_launch(GraphHandle, StreamHandle) {
  return kNotSupported;
}
Status DeviceRuntime::graph_destroy(GraphHandle) { return kNotSupported; }
Status DeviceRuntime::stream_is_capturing(StreamHandle, bool* capturing) {
  *capturing = false;  // a runtime that cannot capture never is
  return kSuccess;
}

namespace {

std::atomic<DeviceRuntime*> g_active{nullptr};
std::atomic<int> g_device_count{-1};
// Set by the first use of the runtime; a child forked after that cannot use
// the device (its runtime threads and contexts did not survive the fork).
std::atomic<bool> g_initialized{false};
std::atomic<bool> g_bad_fork{false};
// The last loaded device library's runtime and kernel registration.
std::atomic<DeviceRuntime*> g_loaded_runtime{nullptr};
std::atomic<void*> g_kernel_registrar{nullptr};
std::atomic<void*> g_loaded_handle{nullptr};

void mark_bad_fork_in_child() {
  if (g_initialized.load()) {
    g_bad_fork.store(true);
  }
}

using EntryPoint = DeviceRuntime* (*)(int*);

}  // namespace

DeviceRuntime* load_device_library(const std::string& path) {
  // RTLD_LOCAL: the device library's own symbols (e.g. a vendor SDK) stay
  // private to it; core only ever reaches it through the entry point.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  TORCH_CHECK(handle != nullptr, "cannot load device library '", path,
              "': ", dlerror());
  auto entry = reinterpret_cast<EntryPoint>(
      dlsym(handle, TORCH_BACKEND_DEVICE_RUNTIME_SYMBOL));
  TORCH_CHECK(entry != nullptr, "device library '", path, "' does not export '",
              TORCH_BACKEND_DEVICE_RUNTIME_SYMBOL,
              "' (use TORCH_BACKEND_DEFINE_DEVICE_RUNTIME)");
  int abi_version = -1;
  DeviceRuntime* runtime = entry(&abi_version);
  TORCH_CHECK(abi_version == kDeviceRuntimeAbiVersion, "device library '", path,
              "' was built for device-runtime ABI ", abi_version,
              " but this torch-backend-core expects ", kDeviceRuntimeAbiVersion,
              "; rebuild the backend package");
  TORCH_CHECK(runtime != nullptr, "device library '", path,
              "' returned no runtime");
  g_kernel_registrar.store(dlsym(handle, TORCH_BACKEND_KERNELS_SYMBOL));
  g_loaded_handle.store(handle);
  g_loaded_runtime.store(runtime);
  return runtime;
}

void* device_library_symbol(const DeviceRuntime* runtime, const char* name) {
  void* handle = g_loaded_handle.load();
  return runtime == g_loaded_runtime.load() && handle != nullptr
             ? dlsym(handle, name)
             : nullptr;
}

void* kernel_registrar_of(const DeviceRuntime* runtime) {
  return runtime == g_loaded_runtime.load() ? g_kernel_registrar.load()
                                            : nullptr;
}

DeviceCollectives* active_collectives() {
  // Not a use of the runtime (it may run at `import torch`, before a fork).
  DeviceRuntime* runtime = g_active.load(std::memory_order_acquire);
  TORCH_CHECK(runtime != nullptr, "no torch-backend device runtime is active");
  using EntryPoint = DeviceCollectives* (*)(int*);
  auto entry = reinterpret_cast<EntryPoint>(
      device_library_symbol(runtime, TORCH_BACKEND_DEVICE_COLLECTIVES_SYMBOL));
  if (entry == nullptr) {
    return nullptr;
  }
  int abi_version = -1;
  DeviceCollectives* collectives = entry(&abi_version);
  TORCH_CHECK(abi_version == kDeviceCollectivesAbiVersion,
              "the device library's collectives were built for "
              "device-collectives ABI ",
              abi_version, " but this torch-backend-core expects ",
              kDeviceCollectivesAbiVersion, "; rebuild the backend package");
  return collectives;
}

void set_active_runtime(DeviceRuntime* runtime) {
  TORCH_CHECK(runtime != nullptr, "set_active_runtime: runtime is null");
  DeviceRuntime* expected = nullptr;
  TORCH_CHECK(g_active.compare_exchange_strong(expected, runtime),
              "a torch-backend device runtime is already active in this "
              "process; PyTorch supports one PrivateUse1 backend per process");
  pthread_atfork(nullptr, nullptr, &mark_bad_fork_in_child);
}

bool is_initialized() { return g_initialized.load(std::memory_order_relaxed); }

bool in_bad_fork() { return g_bad_fork.load(std::memory_order_relaxed); }

Capabilities active_capabilities() {
  DeviceRuntime* runtime = g_active.load(std::memory_order_acquire);
  TORCH_CHECK(runtime != nullptr, "no torch-backend device runtime is active");
  return runtime->capabilities();
}

bool has_active_runtime() { return g_active.load() != nullptr; }

DeviceRuntime& active_runtime() {
  DeviceRuntime* runtime = g_active.load(std::memory_order_acquire);
  TORCH_CHECK(runtime != nullptr, "no torch-backend device runtime is active");
  TORCH_CHECK(!g_bad_fork.load(std::memory_order_relaxed),
              "Cannot re-initialize ", c10::get_privateuse1_backend(),
              " in forked subprocess. To use ", c10::get_privateuse1_backend(),
              " with multiprocessing, you must use the 'spawn' start method");
  if (!g_initialized.load(std::memory_order_relaxed)) {
    g_initialized.store(true);
  }
  return *runtime;
}

void check_status(Status status, const char* call) {
  if (status == kSuccess) {
    return;
  }
  DeviceRuntime& runtime = active_runtime();
  TORCH_CHECK_NOT_IMPLEMENTED(status != kNotSupported, call,
                              " is not supported by the ",
                              c10::get_privateuse1_backend(), " runtime");
  const std::string text = runtime.error_text(status);
  const std::string device = c10::get_privateuse1_backend();
  if (runtime.is_out_of_memory(status)) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, device, " out of memory: ", text,
                     " (status ", status, " from ", call, ")");
  }
  TORCH_CHECK(false, device, " runtime error: ", text, " (status ", status,
              " from ", call, ")");
}

int device_count() {
  int cached = g_device_count.load();
  if (cached >= 0 || !has_active_runtime()) {
    return cached < 0 ? 0 : cached;
  }
  int count = 0;
  TORCH_BACKEND_CHECK(active_runtime().device_count(&count));
  g_device_count.store(count);
  return count;
}

namespace {
thread_local int t_current_device = -1;  // -1: ask the runtime
// Bit d: device d was current on some thread (see used_devices()).
std::atomic<std::uint64_t> g_used_devices{0};

void mark_used(int device) {
  if (device >= 0 && device < 64) {
    g_used_devices.fetch_or(std::uint64_t{1} << device,
                            std::memory_order_relaxed);
  }
}
}  // namespace

int current_device() {
  if (t_current_device < 0) {
    int device = 0;
    TORCH_BACKEND_CHECK(active_runtime().get_device(&device));
    mark_used(device);
    t_current_device = device;
  }
  return t_current_device;
}

void set_current_device(int device) {
  check_device_index(device);
  if (device == t_current_device) {
    return;
  }
  TORCH_BACKEND_CHECK(active_runtime().set_device(device));
  mark_used(device);
  t_current_device = device;
}

void set_current_device_unchecked(int device) noexcept {
  if (device == t_current_device) {
    return;
  }
  try {
    if (active_runtime().set_device(device) == kSuccess) {
      mark_used(device);
      t_current_device = device;
    }
  } catch (...) {
    // noexcept by contract (c10's uncheckedSetDevice); nothing changed.
  }
}

void check_device_index(int device) {
  const int count = device_count();
  TORCH_CHECK(device >= 0 && device < count, "invalid device index ", device,
              " for '", c10::get_privateuse1_backend(), "': ", count,
              " device(s) available");
}

std::vector<int> used_devices() {
  const std::uint64_t mask = g_used_devices.load(std::memory_order_relaxed);
  std::vector<int> devices;
  for (int d = 0; d < 64; ++d) {
    if (mask & (std::uint64_t{1} << d)) {
      devices.push_back(d);
    }
  }
  return devices;
}

void synchronize_used_devices() noexcept {
  if (!is_initialized() || in_bad_fork()) {
    return;
  }
  try {
    DeviceRuntime& runtime = active_runtime();
    const int previous = current_device();
    for (int device : used_devices()) {
      TORCH_BACKEND_CHECK(runtime.set_device(device));
      TORCH_BACKEND_CHECK(runtime.synchronize_device());
    }
    TORCH_BACKEND_CHECK(runtime.set_device(previous));
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "torch-backend: waiting for device work at exit: %s\n",
                 e.what_without_backtrace());
  }
}

}  // namespace torch_backend
