// The device-symbol interface: everything a backend implements, and all it
// implements. Core builds the allocator, guard, hooks, kernels and the
// `torch.<device>` module on top of it.
//
// This header is deliberately free of torch headers so that a backend's
// device file compiles in well under a second and never depends on ATen.
//
// Conventions (modelled on the CUDA / ACL runtime APIs the methods wrap):
//  - Every method returns the native runtime's status code; 0 means success.
//    Core turns a non-zero code into a Python error using error_text().
//  - "Current device" is per host thread, as in cudaSetDevice / aclrtSetDevice.
//  - Methods may be called from any thread, concurrently.
//
// Shutdown contract (what core guarantees about process exit):
//  1. Before the Python interpreter finalises (an atexit handler core
//     registers at activation, with the GIL released), core waits for all work
//     enqueued on every device the process used (synchronize_device on each),
//     then lets PyTorch's autograd device threads finish what they hold. So no
//     device work and no autograd task is in flight once finalisation begins.
//  2. During finalisation and after it, tensors are still destroyed (Python
//     objects torn down, C++ static destructors): core then only returns
//     memory to its caches and may call free, host_free, event_destroy and
//     stream_destroy. The runtime must keep serving these until the process
//     ends: never tear it down from a static destructor, never join its
//     worker threads at exit (leak them: the OS ends them), never call into
//     Python from its threads.
//  3. Core never destroys the runtime and never unloads the device library.
//  4. In a child forked after the runtime was first used, core makes no call
//     into the runtime at all: using the device there raises a RuntimeError
//     ("Cannot re-initialize ... in forked subprocess"), and exit skips step 1.
//  5. A process that used the device exits with its script's own status.
#pragma once

#include <cstddef>
#include <string>

#include <torch_backend/Export.h>

namespace torch_backend {

// Bumped whenever the layout of DeviceRuntime changes; core refuses a device
// library built against a different version instead of crashing in it.
constexpr int kDeviceRuntimeAbiVersion = 7;

using Status = int;
constexpr Status kSuccess = 0;
// Returned by the default implementation of optional methods. Reserved: a
// runtime must not use this value for its own codes.
constexpr Status kNotSupported = -0x7eadbeef;

// Opaque runtime objects. A null StreamHandle is the current device's default
// stream (as in CUDA and ACL).
using StreamHandle = void*;
using EventHandle = void*;
// A physical allocation of device memory, mappable into a reserved range
// (CUmemGenericAllocationHandle, aclrtDrvMemHandle).
using PhysicalHandle = void*;
// Work captured from a stream, launchable as one unit (cudaGraphExec_t,
// aclmdlRI).
using GraphHandle = void*;

// How a capture treats calls that could disturb it (cudaStreamCaptureMode,
// aclmdlRICaptureMode): Global refuses them from any thread, ThreadLocal
// from the capturing thread, Relaxed only those that conflict with the
// capture itself (synchronising the capturing stream).
enum class CaptureMode { Global, ThreadLocal, Relaxed };

enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice };

struct DeviceProperties {
  std::string name;
  std::size_t total_memory = 0;
  std::string capability;  // free-form, e.g. "9.0" or "ascend910b"
  // The same as numbers where the hardware has them (CUDA's compute
  // capability 9.0: major 9, minor 0); -1 where it has none.
  int major = -1;
  int minor = -1;
  int multi_processor_count = 0;  // compute units, where known
  // What compilers of GPU kernels size launches by (Triton, through Inductor's
  // heuristics); 0 where the runtime does not say.
  int warp_size = 0;
  int max_threads_per_block = 0;
  int max_threads_per_multi_processor = 0;
  int regs_per_multiprocessor = 0;
};

// Names one allocation (made by malloc) to another process: the shape of
// cudaIpcMemHandle_t. The bytes are the runtime's own.
struct IpcHandle {
  unsigned char bytes[64] = {};
};

struct Capabilities {
  // Device pointers may be dereferenced by host code (simulators, unified
  // memory). Core then views device memory directly instead of copying.
  bool host_addressable_memory = false;
};

class TORCH_BACKEND_API DeviceRuntime {
 public:
  virtual ~DeviceRuntime();

  // --- devices -------------------------------------------------------------
  // A runtime without devices (no driver, no hardware) reports count 0 and
  // returns kSuccess: "no devices" is not an error. Core counts at `import
  // torch`, before any other call: count without initialising the runtime
  // where initialising breaks a forked child (CUDA's cuInit: the gpu backend
  // counts with NVML, as torch.cuda.device_count does).
  virtual Status device_count(int* count) = 0;
  virtual Status get_device(int* device) = 0;
  virtual Status set_device(int device) = 0;
  virtual Status synchronize_device() = 0;
  virtual Status device_properties(int device, DeviceProperties* props) = 0;
  // Free and total bytes of the current device.
  virtual Status mem_get_info(std::size_t* free_bytes,
                              std::size_t* total_bytes) = 0;

  // --- memory --------------------------------------------------------------
  // Allocates on the current device. bytes is never 0. Core caches device
  // memory, so these are called rarely; free is only called for memory no
  // pending stream work uses.
  virtual Status malloc(void** ptr, std::size_t bytes) = 0;
  virtual Status free(void* ptr) = 0;
  // Page-locked host memory, usable by memcpy_async without staging.
  virtual Status host_malloc(void** ptr, std::size_t bytes) = 0;
  virtual Status host_free(void* ptr) = 0;
  // Synchronous copy, ordered after all work already enqueued on the current
  // device (like cudaMemcpy on the legacy default stream).
  virtual Status memcpy(void* dst, const void* src, std::size_t bytes,
                        CopyKind kind) = 0;
  // Enqueued on `stream` (of the current device); returns at once. The host
  // side of the copy must stay valid until the stream reaches it.
  virtual Status memcpy_async(void* dst, const void* src, std::size_t bytes,
                              CopyKind kind, StreamHandle stream) = 0;

  // --- streams (created on the current device) -----------------------------
  // Numerically lower priority is more urgent (CUDA convention); a runtime
  // without priorities reports {0, 0}.
  virtual Status stream_priority_range(int* least, int* greatest);
  virtual Status stream_create(StreamHandle* stream, int priority) = 0;
  virtual Status stream_destroy(StreamHandle stream) = 0;
  // *complete = whether all work enqueued so far has finished.
  virtual Status stream_query(StreamHandle stream, bool* complete) = 0;
  virtual Status stream_synchronize(StreamHandle stream) = 0;
  // Later work on `stream` waits until `event`'s recorded work completes.
  virtual Status stream_wait_event(StreamHandle stream, EventHandle event) = 0;

  // --- events --------------------------------------------------------------
  virtual Status event_create(EventHandle* event, bool enable_timing) = 0;
  virtual Status event_destroy(EventHandle event) = 0;
  // Captures the work enqueued on `stream` so far. An event never recorded
  // counts as complete, as in CUDA.
  virtual Status event_record(EventHandle event, StreamHandle stream) = 0;
  virtual Status event_query(EventHandle event, bool* complete) = 0;
  virtual Status event_synchronize(EventHandle event) = 0;
  // Milliseconds between two completed events created with timing.
  virtual Status event_elapsed_time(float* ms, EventHandle start,
                                    EventHandle end) = 0;

  // --- optional ------------------------------------------------------------
  // Keeps `stream` busy for about `microseconds` (torch.cuda._sleep's role):
  // lets tests observe asynchrony. Default: kNotSupported.
  virtual Status stream_sleep(StreamHandle stream, unsigned long microseconds);

  // Sharing device memory between processes (torch.multiprocessing), as
  // cudaIpcGetMemHandle / cudaIpcOpenMemHandle / cudaIpcCloseMemHandle do:
  // ipc_get_handle names the allocation that malloc returned at `base`;
  // another process's ipc_open_handle maps the same memory (on the device
  // the allocation is on) and returns its own pointer to it, which
  // ipc_close_handle releases. The producer keeps the allocation alive while
  // consumers use it (core keeps it cached). Default: kNotSupported, and
  // device tensors then cannot be sent to other processes (a clear error).
  virtual Status ipc_get_handle(void* base, IpcHandle* handle);
  virtual Status ipc_open_handle(const IpcHandle& handle, void** ptr);
  virtual Status ipc_close_handle(void* ptr);

  // Virtual memory, in the shape the CUDA driver (cuMemAddressReserve,
  // cuMemCreate, cuMemMap + cuMemSetAccess) and ACL (aclrtReserveMemAddress,
  // aclrtMallocPhysical, aclrtMapMem) share: core's caching allocator grows
  // one address range per stream by mapping pages at its end, and unmaps
  // free pages (PYTORCH_ALLOC_CONF=expandable_segments:True). All on the
  // current device. Default: kNotSupported, and core then warns once and
  // keeps ordinary segments, as PyTorch does where CUDA's driver lacks it.
  // *bytes = the size that reservations, physical allocations and mappings
  // are multiples of.
  virtual Status vm_granularity(std::size_t* bytes);
  // Reserves `bytes` of address space, mapped to nothing.
  virtual Status vm_reserve(void** base, std::size_t bytes);
  virtual Status vm_release(void* base, std::size_t bytes);
  // Physical memory of `bytes`; an out-of-memory status as malloc's.
  virtual Status vm_create(PhysicalHandle* handle, std::size_t bytes);
  virtual Status vm_destroy(PhysicalHandle handle);
  // Maps all of `handle` (`bytes`) at `address` inside a reserved range,
  // readable and writable by the device; unmap returns the range to
  // reserved. Core unmaps only after the device finished with the memory.
  virtual Status vm_map(void* address, std::size_t bytes,
                        PhysicalHandle handle);
  virtual Status vm_unmap(void* address, std::size_t bytes);

  // Graphs: stream capture and replay, as CUDA's stream capture
  // (cudaStreamBeginCapture, cudaStreamEndCapture + cudaGraphInstantiate,
  // cudaGraphLaunch, cudaGraphExecDestroy) and CANN's model capture
  // (aclmdlRICaptureBegin, aclmdlRICaptureEnd, aclmdlRIExecuteAsync,
  // aclmdlRIDestroy). Between begin and end, work enqueued on `stream` (and
  // on streams that waited for an event recorded on it while capturing:
  // they join the capture) is recorded instead of run; end returns it as a
  // graph. A launch enqueues the whole graph on a stream: it runs with the
  // same arguments and addresses each time (core keeps the memory fixed).
  // Synchronising or querying a capturing stream, or a synchronous copy
  // ordered after it, fails (core refuses them first, naming the op).
  // Default: kNotSupported, and torch.<device>.graph then raises a clear
  // error; a runtime that implements capture_begin implements all five.
  virtual Status capture_begin(StreamHandle stream, CaptureMode mode);
  virtual Status capture_end(StreamHandle stream, GraphHandle* graph);
  // Makes a captured graph launchable (cudaGraphInstantiate); runtimes whose
  // capture yields a launchable graph (CANN, fake) keep the default kSuccess.
  virtual Status graph_instantiate(GraphHandle graph);
  virtual Status graph_launch(GraphHandle graph, StreamHandle stream);
  virtual Status graph_destroy(GraphHandle graph);
  // *capturing = whether work enqueued on `stream` now would be captured.
  virtual Status stream_is_capturing(StreamHandle stream, bool* capturing);

  // --- errors and capabilities ----------------------------------------------
  virtual std::string error_text(Status status) = 0;
  virtual bool is_out_of_memory(Status status) = 0;
  virtual Capabilities capabilities();
};

}  // namespace torch_backend

// The only symbol a device library exports. Core finds it with dlsym after
// loading the library on request: nothing is registered at load time, so a
// failed or repeated activation is a Python error, never an abort.
#define TORCH_BACKEND_DEVICE_RUNTIME_SYMBOL "torch_backend_device_runtime"
// Optional second symbol: native kernels (see torch_backend/Kernels.h).
#define TORCH_BACKEND_KERNELS_SYMBOL "torch_backend_register_kernels"

// Place once in the backend's device file:
//   TORCH_BACKEND_DEFINE_DEVICE_RUNTIME(MyRuntime)
// MyRuntime must be default-constructible; it is created on first use and
// never destroyed: tensors may still be freed during interpreter shutdown
// (see the shutdown contract above).
#define TORCH_BACKEND_DEFINE_DEVICE_RUNTIME(RuntimeClass)         \
  extern "C" TORCH_BACKEND_EXPORT ::torch_backend::DeviceRuntime* \
  torch_backend_device_runtime(int* abi_version) {                \
    *abi_version = ::torch_backend::kDeviceRuntimeAbiVersion;     \
    static RuntimeClass* instance = new RuntimeClass();           \
    return instance;                                              \
  }
