// Device symbols of the `fake` device: one call each into its simulated
// hardware (FakeHardware.h), as CudaDevice.cpp calls the CUDA runtime.
// Every call that a real driver can fail has a fault point
// (FaultInjection.h: TORCH_BACKEND_FAKE_FAULTS, torch_backend_fake.faults),
// so core's error paths are tested without hardware.
#include <chrono>
#include <string>
#include <thread>

#include <torch_backend/DeviceRuntime.h>

#include "FakeHardware.h"
#include "FaultInjection.h"

namespace {

using fake::current_device;
using fake::EventRef;
using fake::kernel_failures;
using fake::Machine;
using fake::Operation;
using torch_backend::CopyKind;
using torch_backend::DeviceProperties;
using torch_backend::EventHandle;
using torch_backend::kSuccess;
using torch_backend::Status;
using torch_backend::StreamHandle;

// Returns the status of a fault injected into this call, if any.
#define FAKE_FAULT_POINT(operation, device)                           \
  if (const Status fault = fake::faults().check(operation, device)) { \
    return fault;                                                     \
  }

fake::Stream* stream_of(StreamHandle handle) {
  return Machine::get().stream(handle, current_device());
}
fake::Event& event_of(EventHandle handle) {
  return **static_cast<EventRef*>(handle);
}
EventRef share(EventHandle handle) { return *static_cast<EventRef*>(handle); }

std::shared_ptr<const fake::Graph>* graph_of(torch_backend::GraphHandle graph) {
  return static_cast<std::shared_ptr<const fake::Graph>*>(graph);
}

class FakeRuntime final : public torch_backend::DeviceRuntime {
 public:
  // --- devices ---------------------------------------------------------------
  Status device_count(int* count) override {
    *count = machine_.device_count();
    return kSuccess;
  }

  Status get_device(int* device) override {
    *device = current_device();
    return kSuccess;
  }

  Status set_device(int device) override {
    if (device < 0 || device >= machine_.device_count()) {
      return fake::kInvalidDevice;
    }
    current_device() = device;
    return kSuccess;
  }

  Status synchronize_device() override {
    FAKE_FAULT_POINT(Operation::SynchronizeDevice, current_device());
    if (const Status refused = machine_.refuse_if_capturing(current_device())) {
      return refused;
    }
    machine_.drain(current_device());
    return kernel_failures().take();
  }

  Status device_properties(int device, DeviceProperties* props) override {
    if (device < 0 || device >= machine_.device_count()) {
      return fake::kInvalidDevice;
    }
    props->name = "Fake Device " + std::to_string(device) + " (host memory)";
    props->total_memory = machine_.capacity();
    props->capability = "fake-1.0";
    props->major = 1;
    props->minor = 0;
    props->multi_processor_count = 1;  // one worker thread per stream
    return kSuccess;
  }

  Status mem_get_info(std::size_t* free_bytes,
                      std::size_t* total_bytes) override {
    *total_bytes = machine_.capacity();
    *free_bytes = machine_.capacity() - machine_.used(current_device());
    return kSuccess;
  }

  // --- memory ----------------------------------------------------------------
  Status malloc(void** ptr, std::size_t bytes) override {
    FAKE_FAULT_POINT(Operation::Malloc, current_device());
    return machine_.allocate(current_device(), bytes, ptr);
  }

  Status free(void* ptr) override { return machine_.release(ptr); }

  Status host_malloc(void** ptr, std::size_t bytes) override {
    FAKE_FAULT_POINT(Operation::HostMalloc, -1);
    return machine_.host_allocate(bytes, ptr);
  }

  Status host_free(void* ptr) override { return machine_.host_release(ptr); }

  Status memcpy(void* dst, const void* src, std::size_t bytes,
                CopyKind /*kind*/) override {
    FAKE_FAULT_POINT(Operation::Memcpy, current_device());
    if (const Status refused = machine_.refuse_if_capturing(current_device())) {
      return refused;
    }
    machine_.drain(current_device());
    fake::copy_memory(dst, src, bytes);
    return kernel_failures().take();
  }

  Status memcpy_async(void* dst, const void* src, std::size_t bytes,
                      CopyKind /*kind*/, StreamHandle stream) override {
    fake::Stream* target = stream_of(stream);
    FAKE_FAULT_POINT(Operation::MemcpyAsync, target->device);
    target->enqueue([=] { fake::copy_memory(dst, src, bytes); });
    return kSuccess;
  }

  // --- streams ---------------------------------------------------------------
  Status stream_priority_range(int* least, int* greatest) override {
    *least = 0;
    *greatest = -1;
    return kSuccess;
  }

  Status stream_create(StreamHandle* stream, int /*priority*/) override {
    FAKE_FAULT_POINT(Operation::StreamCreate, current_device());
    *stream = machine_.create_stream(current_device());
    return kSuccess;
  }

  Status stream_destroy(StreamHandle stream) override {
    // Streams are pooled by core and live as long as the process; destroying
    // one only has to make sure its work is done.
    stream_of(stream)->synchronize();
    return kSuccess;
  }

  Status stream_query(StreamHandle stream, bool* complete) override {
    FAKE_FAULT_POINT(Operation::StreamQuery, stream_of(stream)->device);
    if (const Status refused =
            machine_.refuse_if_capturing(current_device(), stream_of(stream))) {
      return refused;
    }
    *complete = stream_of(stream)->idle();
    return kSuccess;
  }

  Status stream_synchronize(StreamHandle stream) override {
    FAKE_FAULT_POINT(Operation::StreamSynchronize, stream_of(stream)->device);
    if (const Status refused =
            machine_.refuse_if_capturing(current_device(), stream_of(stream))) {
      return refused;
    }
    stream_of(stream)->synchronize();
    return kernel_failures().take();
  }

  Status stream_wait_event(StreamHandle stream, EventHandle event) override {
    FAKE_FAULT_POINT(Operation::StreamWaitEvent, stream_of(stream)->device);
    EventRef e = share(event);
    const fake::RecordingRef captured = e->capture();
    if (captured != nullptr &&
        machine_.join_capture(*stream_of(stream), captured)) {
      return kSuccess;  // the capture's order already puts the record first
    }
    if (const std::uint64_t generation = e->last_recorded()) {
      stream_of(stream)->enqueue([e, generation] { e->wait_for(generation); });
    }
    return kSuccess;
  }

  Status stream_sleep(StreamHandle stream, unsigned long us) override {
    stream_of(stream)->enqueue(
        [us] { std::this_thread::sleep_for(std::chrono::microseconds(us)); });
    return kSuccess;
  }

  // --- events ----------------------------------------------------------------
  Status event_create(EventHandle* event, bool enable_timing) override {
    FAKE_FAULT_POINT(Operation::EventCreate, current_device());
    *event = new EventRef(std::make_shared<fake::Event>(enable_timing));
    return kSuccess;
  }

  Status event_destroy(EventHandle event) override {
    delete static_cast<EventRef*>(event);  // queued work keeps its own share
    return kSuccess;
  }

  Status event_record(EventHandle event, StreamHandle stream) override {
    FAKE_FAULT_POINT(Operation::EventRecord, stream_of(stream)->device);
    event_of(event).record_on(*stream_of(stream), share(event));
    return kSuccess;
  }

  Status event_query(EventHandle event, bool* complete) override {
    FAKE_FAULT_POINT(Operation::EventQuery, -1);
    fake::Event& e = event_of(event);
    if (fake::in_open_capture(e)) {
      return fake::kCaptureRefused;
    }
    std::lock_guard<std::mutex> lock(e.mutex);
    *complete = e.completed >= e.recorded;
    return kSuccess;
  }

  Status event_synchronize(EventHandle event) override {
    FAKE_FAULT_POINT(Operation::EventSynchronize, -1);
    fake::Event& e = event_of(event);
    if (fake::in_open_capture(e)) {
      return fake::kCaptureRefused;
    }
    e.wait_for(e.last_recorded());
    return kernel_failures().take();
  }

  Status event_elapsed_time(float* ms, EventHandle start,
                            EventHandle end) override {
    fake::Event* a = &event_of(start);
    fake::Event* b = &event_of(end);
    if (!a->timing || !b->timing) {
      return fake::kNoTiming;
    }
    std::scoped_lock lock(a->mutex, b->mutex);
    if (a->recorded == 0 || b->recorded == 0 || a->completed < a->recorded ||
        b->completed < b->recorded) {
      return fake::kNotReady;
    }
    *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
    return kSuccess;
  }

  // --- sharing between processes ---------------------------------------------
  // TORCH_BACKEND_FAKE_IPC=0 plays a runtime without handles.
  Status ipc_get_handle(void* base, torch_backend::IpcHandle* handle) override {
    if (!machine_.ipc()) {
      return torch_backend::kNotSupported;
    }
    return machine_.share(base, handle);
  }

  Status ipc_open_handle(const torch_backend::IpcHandle& handle,
                         void** ptr) override {
    if (!machine_.ipc()) {
      return torch_backend::kNotSupported;
    }
    return machine_.open_shared(handle, ptr);
  }

  Status ipc_close_handle(void* ptr) override {
    return machine_.close_shared(ptr);
  }

  // --- virtual memory (expandable segments) ----------------------------------
  Status vm_granularity(std::size_t* bytes) override {
    *bytes = fake::Machine::kPageBytes;
    return kSuccess;
  }
  Status vm_reserve(void** base, std::size_t bytes) override {
    return machine_.reserve(bytes, base);
  }
  Status vm_release(void* base, std::size_t bytes) override {
    return machine_.unreserve(base, bytes);
  }
  Status vm_create(torch_backend::PhysicalHandle* handle,
                   std::size_t bytes) override {
    FAKE_FAULT_POINT(Operation::Malloc, current_device());
    return machine_.create_physical(current_device(), bytes, handle);
  }
  Status vm_destroy(torch_backend::PhysicalHandle handle) override {
    return machine_.destroy_physical(handle);
  }
  Status vm_map(void* address, std::size_t bytes,
                torch_backend::PhysicalHandle handle) override {
    return machine_.map(address, bytes, handle);
  }
  Status vm_unmap(void* address, std::size_t bytes) override {
    return machine_.unmap(address, bytes);
  }

  // --- graphs: a capture records a stream's work; a launch replays it --------
  // Every capture mode behaves as Relaxed: only calls that wait for a
  // capturing stream (or for an event recorded in an open capture) fail.
  // TORCH_BACKEND_FAKE_GRAPHS=0 plays a runtime without them.
  Status capture_begin(StreamHandle stream,
                       torch_backend::CaptureMode /*mode*/) override {
    if (!machine_.graphs()) {
      return torch_backend::kNotSupported;
    }
    return machine_.begin_capture(*stream_of(stream));
  }
  Status capture_end(StreamHandle stream,
                     torch_backend::GraphHandle* graph) override {
    std::shared_ptr<const fake::Graph> captured;
    const Status status = machine_.end_capture(*stream_of(stream), &captured);
    if (status == kSuccess) {
      *graph = new std::shared_ptr<const fake::Graph>(std::move(captured));
    }
    return status;
  }
  Status graph_launch(torch_backend::GraphHandle graph,
                      StreamHandle stream) override {
    stream_of(stream)->launch(*graph_of(graph));
    return kSuccess;
  }
  Status graph_destroy(torch_backend::GraphHandle graph) override {
    delete graph_of(graph);  // launches in flight keep their own share
    return kSuccess;
  }
  Status stream_is_capturing(StreamHandle stream, bool* capturing) override {
    *capturing = stream_of(stream)->recording() != nullptr;
    return kSuccess;
  }

  // --- errors and capabilities -----------------------------------------------
  std::string error_text(Status status) override {
    switch (status) {
      case kSuccess:
        return "no error";
      case fake::kOutOfMemory:
        return "out of fake device memory";
      case fake::kInvalidDevice:
        return "invalid device ordinal";
      case fake::kInvalidPointer:
        return "pointer was not allocated by the fake runtime";
      case fake::kInvalidValue:
        return "invalid argument";
      case fake::kNotReady:
        return "event not recorded or its work not complete yet";
      case fake::kNoTiming:
        return "events were created without enable_timing=True";
      case fake::kInjectedFault:
        return "injected fault (TORCH_BACKEND_FAKE_FAULTS or "
               "torch_backend_fake.faults)";
      case fake::kIpcGone:
        return "the shared device memory is gone (the producing process "
               "freed it or exited; keep the tensor alive while others use "
               "it)";
      case fake::kNotShareable:
        return "this allocation is not shareable: it was made when the "
               "process had no file descriptor left (raise ulimit -n)";
      case fake::kKernelFailed:
        return "a kernel failed on the device: " +
               fake::KernelFailures::reported_message();
      case fake::kCaptureRefused:
        return "operation not permitted when a stream is capturing (the "
               "capture is invalidated)";
      case fake::kDeviceLost:
        return "device lost (injected by "
               "torch_backend_fake.faults.lose_device)";
      default:
        return "unknown fake runtime status " + std::to_string(status);
    }
  }

  bool is_out_of_memory(Status status) override {
    return status == fake::kOutOfMemory;
  }

  torch_backend::Capabilities capabilities() override {
    return {/*host_addressable_memory=*/!machine_.discrete()};
  }

 private:
  Machine& machine_ = Machine::get();
};

}  // namespace

TORCH_BACKEND_DEFINE_DEVICE_RUNTIME(FakeRuntime)
