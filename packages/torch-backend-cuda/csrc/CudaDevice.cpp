// Device symbols of the `gpu` device: the CUDA runtime API, one call each.
// Streams are created non-blocking and the null handle is the legacy default
// stream, as in PyTorch's own CUDA backend. cudart is linked statically, so
// the library needs only the driver at run time.
#include <cuda_runtime_api.h>

#include <torch_backend/DeviceRuntime.h>

#include <string>

#include "CudaBackend.h"

namespace {

using gpu::stream_of;

using torch_backend::CopyKind;
using torch_backend::DeviceProperties;
using torch_backend::EventHandle;
using torch_backend::Status;
using torch_backend::StreamHandle;

cudaMemcpyKind to_cuda(CopyKind kind) {
  switch (kind) {
    case CopyKind::HostToDevice:
      return cudaMemcpyHostToDevice;
    case CopyKind::DeviceToHost:
      return cudaMemcpyDeviceToHost;
    case CopyKind::DeviceToDevice:
      return cudaMemcpyDeviceToDevice;
  }
  return cudaMemcpyDefault;
}

cudaStreamCaptureMode to_cuda(torch_backend::CaptureMode mode) {
  switch (mode) {
    case torch_backend::CaptureMode::ThreadLocal:
      return cudaStreamCaptureModeThreadLocal;
    case torch_backend::CaptureMode::Relaxed:
      return cudaStreamCaptureModeRelaxed;
    case torch_backend::CaptureMode::Global:
    default:
      return cudaStreamCaptureModeGlobal;
  }
}

// This thread's stream capture mode set to relaxed for the guard's life.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&previous_); }
  ~RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&previous_); }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode previous_ = cudaStreamCaptureModeRelaxed;
};

// A captured graph and, once instantiated, its executable form.
struct CapturedGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};
CapturedGraph* graph_of(torch_backend::GraphHandle g) {
  return static_cast<CapturedGraph*>(g);
}
cudaEvent_t event_of(EventHandle e) { return static_cast<cudaEvent_t>(e); }

// A failed call's status is returned to core, which raises or recovers (an
// out-of-memory retried after freeing the cache, a capture abandoned): it
// must not also stay behind as the thread's last CUDA error, which the next
// kernel launch's check (cudaGetLastError) would report as its own failure.
cudaError_t reported(cudaError_t status) {
  if (status != cudaSuccess) {
    cudaGetLastError();
  }
  return status;
}

// cudaErrorNotReady answers a query; it is not a failure (and must not stay
// behind as the thread's last error).
Status readiness(cudaError_t status, bool* complete) {
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    *complete = false;
    return cudaSuccess;
  }
  *complete = status == cudaSuccess;
  return reported(status);
}

class CudaRuntime final : public torch_backend::DeviceRuntime {
 public:
  Status device_count(int* count) override {
    // Fork-safe while NVML can answer: CUDA itself only where it cannot.
    static const int counted = gpu::count_devices_without_cuda();
    if (counted >= 0) {
      *count = counted;
      return cudaSuccess;
    }
    const cudaError_t status = cudaGetDeviceCount(count);
    if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) {
      cudaGetLastError();
      *count = 0;  // no hardware or driver: no devices, not an error
      return cudaSuccess;
    }
    return reported(status);
  }
  Status get_device(int* device) override {
    return reported(cudaGetDevice(device));
  }
  Status set_device(int device) override {
    return reported(cudaSetDevice(device));
  }
  Status synchronize_device() override {
    return reported(cudaDeviceSynchronize());
  }

  Status device_properties(int device, DeviceProperties* props) override {
    cudaDeviceProp prop{};
    const cudaError_t status = reported(cudaGetDeviceProperties(&prop, device));
    if (status == cudaSuccess) {
      props->name = prop.name;
      props->total_memory = prop.totalGlobalMem;
      props->capability =
          std::to_string(prop.major) + "." + std::to_string(prop.minor);
      props->major = prop.major;
      props->minor = prop.minor;
      props->multi_processor_count = prop.multiProcessorCount;
      props->warp_size = prop.warpSize;
      props->max_threads_per_block = prop.maxThreadsPerBlock;
      props->max_threads_per_multi_processor = prop.maxThreadsPerMultiProcessor;
      props->regs_per_multiprocessor = prop.regsPerMultiprocessor;
    }
    return status;
  }

  Status mem_get_info(std::size_t* free_bytes,
                      std::size_t* total_bytes) override {
    return reported(cudaMemGetInfo(free_bytes, total_bytes));
  }

  // Allocations in relaxed capture mode: while any stream captures in
  // Global mode, CUDA refuses cudaMalloc (and invalidates the capture) unless
  // the calling thread's mode is relaxed. Core allocates a graph's memory
  // during its capture and frees none of it before the graph is reset, as
  // PyTorch's allocator (cudaMallocMaybeCapturing) does.
  Status malloc(void** ptr, std::size_t bytes) override {
    const RelaxedCaptureMode relaxed;
    return reported(cudaMalloc(ptr, bytes));
  }
  Status free(void* ptr) override { return reported(cudaFree(ptr)); }
  Status host_malloc(void** ptr, std::size_t bytes) override {
    const RelaxedCaptureMode relaxed;
    return reported(cudaHostAlloc(ptr, bytes, cudaHostAllocDefault));
  }
  Status host_free(void* ptr) override { return reported(cudaFreeHost(ptr)); }

  // Expandable segments: the driver's virtual memory calls.
  Status vm_granularity(std::size_t* bytes) override {
    return gpu::vm_granularity(bytes);
  }
  Status vm_reserve(void** base, std::size_t bytes) override {
    return gpu::vm_reserve(base, bytes);
  }
  Status vm_release(void* base, std::size_t bytes) override {
    return gpu::vm_release(base, bytes);
  }
  Status vm_create(torch_backend::PhysicalHandle* handle,
                   std::size_t bytes) override {
    return gpu::vm_create(handle, bytes);
  }
  Status vm_destroy(torch_backend::PhysicalHandle handle) override {
    return gpu::vm_destroy(handle);
  }
  Status vm_map(void* address, std::size_t bytes,
                torch_backend::PhysicalHandle handle) override {
    return gpu::vm_map(address, bytes, handle);
  }
  Status vm_unmap(void* address, std::size_t bytes) override {
    return gpu::vm_unmap(address, bytes);
  }

  // Ordered after all work on the device, non-blocking streams included.
  Status memcpy(void* dst, const void* src, std::size_t bytes,
                CopyKind kind) override {
    const cudaError_t status = cudaDeviceSynchronize();
    return reported(status != cudaSuccess
                        ? status
                        : cudaMemcpy(dst, src, bytes, to_cuda(kind)));
  }
  Status memcpy_async(void* dst, const void* src, std::size_t bytes,
                      CopyKind kind, StreamHandle stream) override {
    return reported(
        cudaMemcpyAsync(dst, src, bytes, to_cuda(kind), stream_of(stream)));
  }

  Status stream_priority_range(int* least, int* greatest) override {
    return reported(cudaDeviceGetStreamPriorityRange(least, greatest));
  }
  Status stream_create(StreamHandle* stream, int priority) override {
    cudaStream_t created = nullptr;
    const cudaError_t status = reported(cudaStreamCreateWithPriority(
        &created, cudaStreamNonBlocking, priority));
    *stream = created;
    return status;
  }
  Status stream_destroy(StreamHandle stream) override {
    return reported(cudaStreamDestroy(stream_of(stream)));
  }
  Status stream_query(StreamHandle stream, bool* complete) override {
    return readiness(cudaStreamQuery(stream_of(stream)), complete);
  }
  Status stream_synchronize(StreamHandle stream) override {
    return reported(cudaStreamSynchronize(stream_of(stream)));
  }
  Status stream_wait_event(StreamHandle stream, EventHandle event) override {
    return reported(cudaStreamWaitEvent(stream_of(stream), event_of(event), 0));
  }

  Status event_create(EventHandle* event, bool enable_timing) override {
    cudaEvent_t created = nullptr;
    const cudaError_t status = reported(cudaEventCreateWithFlags(
        &created, enable_timing ? cudaEventDefault : cudaEventDisableTiming));
    *event = created;
    return status;
  }
  Status event_destroy(EventHandle event) override {
    return reported(cudaEventDestroy(event_of(event)));
  }
  Status event_record(EventHandle event, StreamHandle stream) override {
    return reported(cudaEventRecord(event_of(event), stream_of(stream)));
  }
  Status event_query(EventHandle event, bool* complete) override {
    return readiness(cudaEventQuery(event_of(event)), complete);
  }
  Status event_synchronize(EventHandle event) override {
    return reported(cudaEventSynchronize(event_of(event)));
  }
  Status event_elapsed_time(float* ms, EventHandle start,
                            EventHandle end) override {
    return reported(cudaEventElapsedTime(ms, event_of(start), event_of(end)));
  }

  // A kernel on the stream that takes `microseconds` (kernels in
  // CudaKernels.cu).
  Status stream_sleep(StreamHandle stream,
                      unsigned long microseconds) override {
    return gpu::launch_stream_sleep(stream, microseconds);
  }

  // Graphs: CUDA stream capture, as torch.cuda.CUDAGraph.
  Status capture_begin(StreamHandle stream,
                       torch_backend::CaptureMode mode) override {
    return reported(cudaStreamBeginCapture(stream_of(stream), to_cuda(mode)));
  }
  Status capture_end(StreamHandle stream,
                     torch_backend::GraphHandle* graph) override {
    cudaGraph_t captured = nullptr;
    const cudaError_t status =
        reported(cudaStreamEndCapture(stream_of(stream), &captured));
    if (status == cudaSuccess) {
      *graph = new CapturedGraph{captured, nullptr};
    }
    return status;
  }
  Status graph_instantiate(torch_backend::GraphHandle graph) override {
    CapturedGraph* g = graph_of(graph);
    return g->exec != nullptr
               ? cudaSuccess
               : reported(cudaGraphInstantiate(&g->exec, g->graph, 0));
  }
  Status graph_launch(torch_backend::GraphHandle graph,
                      StreamHandle stream) override {
    return reported(cudaGraphLaunch(graph_of(graph)->exec, stream_of(stream)));
  }
  Status graph_destroy(torch_backend::GraphHandle graph) override {
    CapturedGraph* g = graph_of(graph);
    cudaError_t status = cudaSuccess;
    if (g->exec != nullptr) {
      status = cudaGraphExecDestroy(g->exec);
    }
    const cudaError_t destroyed = cudaGraphDestroy(g->graph);
    delete g;
    return reported(status != cudaSuccess ? status : destroyed);
  }
  Status stream_is_capturing(StreamHandle stream, bool* capturing) override {
    cudaStreamCaptureStatus state = cudaStreamCaptureStatusNone;
    const cudaError_t status =
        reported(cudaStreamIsCapturing(stream_of(stream), &state));
    *capturing = state != cudaStreamCaptureStatusNone;
    return status;
  }

  std::string error_text(Status status) override {
    if (gpu::is_cublas_status(status)) {
      return gpu::cublas_status_text(status);
    }
    if (gpu::is_cudnn_status(status)) {
      return gpu::cudnn_status_text(status);
    }
    if (gpu::is_driver_status(status)) {
      return gpu::driver_status_text(status);
    }
    return std::string(cudaGetErrorName(static_cast<cudaError_t>(status))) +
           ": " + cudaGetErrorString(static_cast<cudaError_t>(status));
  }
  bool is_out_of_memory(Status status) override {
    return status == cudaErrorMemoryAllocation;
  }
};

}  // namespace

TORCH_BACKEND_DEFINE_DEVICE_RUNTIME(CudaRuntime)
