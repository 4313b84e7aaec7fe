// Device symbols of the `npu` device: Ascend's ACL runtime API, one call
// each. aclInit runs once, when the runtime is first used; aclFinalize never
// runs (core's shutdown contract: tensors are freed until the process ends,
// so the runtime must serve until then). A forked child makes no ACL call
// at all (core refuses the device there).
#include <acl/acl.h>

#include <torch_backend/DeviceRuntime.h>

#include <chrono>
#include <string>
#include <thread>

namespace {

using torch_backend::CopyKind;
using torch_backend::DeviceProperties;
using torch_backend::EventHandle;
using torch_backend::Status;
using torch_backend::StreamHandle;

aclrtMemcpyKind to_acl(CopyKind kind) {
  switch (kind) {
    case CopyKind::HostToDevice:
      return ACL_MEMCPY_HOST_TO_DEVICE;
    case CopyKind::DeviceToHost:
      return ACL_MEMCPY_DEVICE_TO_HOST;
    case CopyKind::DeviceToDevice:
      return ACL_MEMCPY_DEVICE_TO_DEVICE;
  }
  return ACL_MEMCPY_DEVICE_TO_DEVICE;
}

// Device memory of the current device, in huge pages.
aclmdlRICaptureMode to_acl(torch_backend::CaptureMode mode) {
  switch (mode) {
    case torch_backend::CaptureMode::ThreadLocal:
      return ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL;
    case torch_backend::CaptureMode::Relaxed:
      return ACL_MODEL_RI_CAPTURE_MODE_RELAXED;
    case torch_backend::CaptureMode::Global:
    default:
      return ACL_MODEL_RI_CAPTURE_MODE_GLOBAL;
  }
}

aclrtPhysicalMemProp physical_memory() {
  int32_t device = 0;
  (void)aclrtGetDevice(&device);
  aclrtPhysicalMemProp prop{};
  prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
  prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
  prop.memAttr = ACL_HBM_MEM_HUGE;
  prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = static_cast<uint32_t>(device);
  return prop;
}

class NpuRuntime final : public torch_backend::DeviceRuntime {
 public:
  NpuRuntime() {
    const aclError status = aclInit(nullptr);
    // Another library of the process may have initialised ACL first.
    init_status_ = status == ACL_ERROR_REPEAT_INITIALIZE ? ACL_SUCCESS : status;
  }

  Status device_count(int* count) override {
    uint32_t devices = 0;
    const aclError status = init_status_ != ACL_SUCCESS
                                ? init_status_
                                : aclrtGetDeviceCount(&devices);
    *count = static_cast<int>(devices);
    return status;
  }
  // ACL has no current device until aclrtSetDevice on each thread; PyTorch's
  // convention (and CUDA's) is device 0.
  Status get_device(int* device) override {
    int32_t current = 0;
    aclError status = aclrtGetDevice(&current);
    if (status == ACL_ERROR_RT_CONTEXT_NULL) {
      status = aclrtSetDevice(0);
      current = 0;
    }
    *device = current;
    return status;
  }
  Status set_device(int device) override { return aclrtSetDevice(device); }
  Status synchronize_device() override { return aclrtSynchronizeDevice(); }

  Status device_properties(int device, DeviceProperties* props) override {
    int previous = 0;
    Status status = get_device(&previous);
    if (status == ACL_SUCCESS) {
      status = aclrtSetDevice(device);
    }
    if (status == ACL_SUCCESS) {
      std::size_t free_bytes = 0;
      status = aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &props->total_memory);
      const char* soc = aclrtGetSocName();
      props->name = soc != nullptr ? soc : "Ascend NPU";
      props->capability = props->name;
      const Status restored = aclrtSetDevice(previous);
      status = status != ACL_SUCCESS ? status : restored;
    }
    return status;
  }

  Status mem_get_info(std::size_t* free_bytes,
                      std::size_t* total_bytes) override {
    return aclrtGetMemInfo(ACL_HBM_MEM, free_bytes, total_bytes);
  }

  Status malloc(void** ptr, std::size_t bytes) override {
    return aclrtMalloc(ptr, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  }
  Status free(void* ptr) override { return aclrtFree(ptr); }
  Status host_malloc(void** ptr, std::size_t bytes) override {
    return aclrtMallocHost(ptr, bytes);
  }
  Status host_free(void* ptr) override { return aclrtFreeHost(ptr); }

  // Virtual memory (expandable segments): ACL's, one call each.
  Status vm_granularity(std::size_t* bytes) override {
    aclrtPhysicalMemProp prop = physical_memory();
    return aclrtMemGetAllocationGranularity(
        &prop, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, bytes);
  }
  Status vm_reserve(void** base, std::size_t bytes) override {
    return aclrtReserveMemAddress(base, bytes, 0, nullptr, 0);
  }
  Status vm_release(void* base, std::size_t /*bytes*/) override {
    return aclrtReleaseMemAddress(base);
  }
  Status vm_create(torch_backend::PhysicalHandle* handle,
                   std::size_t bytes) override {
    const aclrtPhysicalMemProp prop = physical_memory();
    return aclrtMallocPhysical(handle, bytes, &prop, 0);
  }
  Status vm_destroy(torch_backend::PhysicalHandle handle) override {
    return aclrtFreePhysical(handle);
  }
  Status vm_map(void* address, std::size_t bytes,
                torch_backend::PhysicalHandle handle) override {
    return aclrtMapMem(address, bytes, 0, handle, 0);
  }
  Status vm_unmap(void* address, std::size_t /*bytes*/) override {
    return aclrtUnmapMem(address);
  }

  // Ordered after all work on the device, as core requires.
  Status memcpy(void* dst, const void* src, std::size_t bytes,
                CopyKind kind) override {
    const aclError status = aclrtSynchronizeDevice();
    return status != ACL_SUCCESS
               ? status
               : aclrtMemcpy(dst, bytes, src, bytes, to_acl(kind));
  }
  Status memcpy_async(void* dst, const void* src, std::size_t bytes,
                      CopyKind kind, StreamHandle stream) override {
    return aclrtMemcpyAsync(dst, bytes, src, bytes, to_acl(kind), stream);
  }

  Status stream_create(StreamHandle* stream, int /*priority*/) override {
    aclrtStream created = nullptr;
    const aclError status = aclrtCreateStreamWithConfig(&created, 0, 0);
    *stream = created;
    return status;
  }
  Status stream_destroy(StreamHandle stream) override {
    return aclrtDestroyStream(stream);
  }
  Status stream_query(StreamHandle stream, bool* complete) override {
    aclrtStreamStatus state = ACL_STREAM_STATUS_NOT_READY;
    const aclError status = aclrtStreamQuery(stream, &state);
    *complete = state == ACL_STREAM_STATUS_COMPLETE;
    return status;
  }
  Status stream_synchronize(StreamHandle stream) override {
    return aclrtSynchronizeStream(stream);
  }
  Status stream_wait_event(StreamHandle stream, EventHandle event) override {
    return aclrtStreamWaitEvent(stream, event);
  }

  // A host function in stream order: the stream is busy while it sleeps.
  Status stream_sleep(StreamHandle stream,
                      unsigned long microseconds) override {
    auto* duration = new std::chrono::microseconds(microseconds);
    const aclError status = aclrtLaunchHostFunc(
        stream,
        [](void* args) {
          auto* slept = static_cast<std::chrono::microseconds*>(args);
          std::this_thread::sleep_for(*slept);
          delete slept;
        },
        duration);
    if (status != ACL_SUCCESS) {
      delete duration;
    }
    return status;
  }

  Status event_create(EventHandle* event, bool enable_timing) override {
    aclrtEvent created = nullptr;
    const aclError status = aclrtCreateEventWithFlag(
        &created,
        enable_timing ? ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE : ACL_EVENT_SYNC);
    *event = created;
    return status;
  }
  Status event_destroy(EventHandle event) override {
    return aclrtDestroyEvent(event);
  }
  Status event_record(EventHandle event, StreamHandle stream) override {
    return aclrtRecordEvent(event, stream);
  }
  Status event_query(EventHandle event, bool* complete) override {
    aclrtEventRecordedStatus state = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    const aclError status = aclrtQueryEventStatus(event, &state);
    *complete = state == ACL_EVENT_RECORDED_STATUS_COMPLETE;
    return status;
  }
  Status event_synchronize(EventHandle event) override {
    return aclrtSynchronizeEvent(event);
  }
  Status event_elapsed_time(float* ms, EventHandle start,
                            EventHandle end) override {
    return aclrtEventElapsedTime(ms, start, end);
  }

  // Graphs: CANN's model capture (aclmdlRI), as torch_npu's NPUGraph; the
  // model a capture ends with is launchable as it is.
  Status capture_begin(StreamHandle stream,
                       torch_backend::CaptureMode mode) override {
    return aclmdlRICaptureBegin(stream, to_acl(mode));
  }
  Status capture_end(StreamHandle stream,
                     torch_backend::GraphHandle* graph) override {
    aclmdlRI model = nullptr;
    const aclError status = aclmdlRICaptureEnd(stream, &model);
    *graph = model;
    return status;
  }
  Status graph_launch(torch_backend::GraphHandle graph,
                      StreamHandle stream) override {
    return aclmdlRIExecuteAsync(graph, stream);
  }
  Status graph_destroy(torch_backend::GraphHandle graph) override {
    return aclmdlRIDestroy(graph);
  }
  Status stream_is_capturing(StreamHandle stream, bool* capturing) override {
    aclmdlRICaptureStatus state = ACL_MODEL_RI_CAPTURE_STATUS_NONE;
    const aclError status = aclmdlRICaptureGetInfo(stream, &state, nullptr);
    // An invalidated capture still holds the stream until it ends.
    *capturing = state != ACL_MODEL_RI_CAPTURE_STATUS_NONE;
    return status;
  }

  // ACL keeps the message of the calling thread's last failure.
  std::string error_text(Status status) override {
    const char* message = aclGetRecentErrMsg();
    return "ACL error " + std::to_string(status) +
           (message != nullptr ? std::string(": ") + message : "");
  }
  bool is_out_of_memory(Status status) override {
    return status == ACL_ERROR_RT_MEMORY_ALLOCATION ||
           status == ACL_ERROR_BAD_ALLOC;
  }

 private:
  aclError init_status_ = ACL_SUCCESS;
};

}  // namespace

TORCH_BACKEND_DEFINE_DEVICE_RUNTIME(NpuRuntime)
