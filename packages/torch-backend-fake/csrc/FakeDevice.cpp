// Device symbols of the `fake` device: a simulated accelerator.
//  - Device memory is host memory owned by this runtime (never the CPU
//    allocator), with a per-device capacity, so device and CPU tensors are
//    genuinely different storages and an oversized allocation really fails.
//  - Each stream is a worker thread running its work in order, so
//    asynchronous copies complete later, events complete when the stream
//    reaches them and cross-stream waits block the waiting stream only.
//
// Environment:
//   TORCH_BACKEND_FAKE_DEVICE_COUNT  number of devices (default 2)
//   TORCH_BACKEND_FAKE_MEMORY_MB     capacity of each device (default 65536)
//   TORCH_BACKEND_FAKE_DISCRETE      1: report memory host code may not
//                                    address, as a discrete accelerator's,
//                                    so core takes the paths npu and cuda
//                                    take (copy fallback, staged copies)
//   TORCH_BACKEND_FAKE_FAULTS        runtime calls that fail, for testing
//                                    error paths (FaultInjection.h)
//   TORCH_BACKEND_FAKE_IPC           0: no inter-process memory handles (a
//                                    runtime without them), so device
//                                    tensors cannot go to other processes
//
// A kernel that fails on a stream's worker (fake's kernels call ATen's CPU
// kernels, which may throw) fails asynchronously, as a CUDA kernel does: the
// error is kept and reported by the next call that synchronises with the
// device (stream, event or device synchronize, a blocking copy), once.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <torch_backend/DeviceRuntime.h>

#include "FaultInjection.h"

namespace {

using torch_backend::CopyKind;
using torch_backend::DeviceProperties;
using torch_backend::EventHandle;
using torch_backend::kSuccess;
using torch_backend::Status;
using torch_backend::StreamHandle;
using Clock = std::chrono::steady_clock;
using fake::Operation;

// Returns the status of a fault injected into this call, if any.
#define FAKE_FAULT_POINT(operation, device)                           \
  if (const Status fault = fake::faults().check(operation, device)) { \
    return fault;                                                     \
  }

enum FakeStatus : Status {
  kOutOfMemory = 1,
  kInvalidDevice = 2,
  kInvalidPointer = 3,
  kInvalidValue = 4,
  kNotReady = 5,
  kNoTiming = 6,
  // 7, 8: FaultInjection.h
  kKernelFailed = 9,
  kIpcGone = 10,
  kNotShareable = 11,
};

// The first kernel failure not yet reported, from any stream.
class KernelFailures {
 public:
  void record(std::string what) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!pending_) {
      message_ = std::move(what);
      pending_ = true;
    }
  }

  // kKernelFailed (once per failure) with its message kept for error_text on
  // this thread; kSuccess when none is pending.
  Status take() {
    if (!pending_.load(std::memory_order_acquire)) {
      return kSuccess;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!pending_) {
      return kSuccess;
    }
    pending_ = false;
    reported_ = std::move(message_);
    return kKernelFailed;
  }

  static thread_local std::string reported_;

 private:
  std::mutex mutex_;
  std::atomic<bool> pending_{false};
  std::string message_;
};

thread_local std::string KernelFailures::reported_;

KernelFailures& kernel_failures() {
  static KernelFailures* failures = new KernelFailures;  // outlives workers
  return *failures;
}

constexpr std::size_t kAlignment = 64;

// The simulated copy engine uses every core for large copies, as the CPU's
// own copy_ does, so host<->device bandwidth matches host<->host.
void copy_memory(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t kParallelFrom = 4 << 20;
  const unsigned lanes = std::max(1u, std::thread::hardware_concurrency());
  if (bytes < kParallelFrom || lanes == 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const std::size_t chunk = (bytes / lanes + 63) / 64 * 64;
  std::vector<std::thread> helpers;
  for (unsigned lane = 1; lane < lanes && lane * chunk < bytes; ++lane) {
    const std::size_t offset = lane * chunk;
    const std::size_t size = std::min(chunk, bytes - offset);
    helpers.emplace_back([=] {
      std::memcpy(static_cast<char*>(dst) + offset,
                  static_cast<const char*>(src) + offset, size);
    });
  }
  std::memcpy(dst, src, std::min(chunk, bytes));
  for (std::thread& helper : helpers) {
    helper.join();
  }
}

long env_long(const char* name, long fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    return fallback;
  }
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return (*end == '\0' && value >= 0) ? value : fallback;
}

// Work items of one stream, run in order by its own worker thread.
class Stream {
 public:
  // The worker lives as long as the process, like the runtime: never joined
  // (joining from a static destructor at exit would race the interpreter's
  // teardown). Core drains every stream before finalisation and enqueues
  // nothing after it (shutdown contract in DeviceRuntime.h).
  explicit Stream(int device) : device(device), worker_([this] { run(); }) {
    worker_.detach();
  }

  void enqueue(std::function<void()> work) { push({std::move(work), false}); }

  // Runs `signal` once all earlier work is done *and counted*, so that a
  // thread woken by it already sees the stream idle (event semantics).
  void enqueue_marker(std::function<void()> signal) {
    push({std::move(signal), true});
  }

  // Counters change under the mutex but are read without it: an idle
  // stream (the common case: the CPU fallback synchronises before every
  // kernel) answers without locking. The acquire pairs with the worker's
  // increment after the work, so its writes are visible.
  bool idle() const {
    return completed_.load(std::memory_order_acquire) ==
           enqueued_.load(std::memory_order_acquire);
  }

  void synchronize() {
    if (idle()) {
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t target = enqueued_;
    work_done_.wait(lock, [&] { return completed_ >= target; });
  }

  const int device;

 private:
  struct Item {
    std::function<void()> work;
    bool marker;
  };

  void push(Item item) {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(item));
    ++enqueued_;
    work_ready_.notify_one();
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      work_ready_.wait(lock, [&] { return !queue_.empty(); });
      Item item = std::move(queue_.front());
      queue_.pop_front();
      if (item.marker) {
        ++completed_;
        work_done_.notify_all();
        lock.unlock();
        item.work();
        lock.lock();
        continue;
      }
      lock.unlock();
      run_kernel(item.work);
      lock.lock();
      ++completed_;
      work_done_.notify_all();
    }
  }

  // A failing kernel must not end the worker (std::terminate): its error is
  // kept for the next synchronising call, and later work still runs.
  static void run_kernel(const std::function<void()>& work) {
    try {
      work();
    } catch (const std::exception& error) {
      kernel_failures().record(error.what());
    } catch (...) {
      kernel_failures().record("unknown exception");
    }
  }

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  std::deque<Item> queue_;
  std::atomic<std::uint64_t> enqueued_{0};
  std::atomic<std::uint64_t> completed_{0};
  std::thread worker_;
};

// Completion of the work a stream had when the event was last recorded.
struct Event {
  explicit Event(bool timing) : timing(timing) {}

  void complete(std::uint64_t generation) {
    std::lock_guard<std::mutex> lock(mutex);
    completed = std::max(completed, generation);
    when = Clock::now();
    done.notify_all();
  }

  void wait_for(std::uint64_t generation) {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return completed >= generation; });
  }

  const bool timing;
  std::mutex mutex;
  std::condition_variable done;
  std::uint64_t recorded = 0;
  std::uint64_t completed = 0;
  Clock::time_point when;
};

// Streams may still wait on or complete an event after its handle was
// destroyed (allowed in CUDA too), so queued work shares ownership of it.
using EventRef = std::shared_ptr<Event>;

Event& event_of(EventHandle handle) { return **static_cast<EventRef*>(handle); }

EventRef share(EventHandle handle) { return *static_cast<EventRef*>(handle); }

class FakeRuntime final : public torch_backend::DeviceRuntime {
 public:
  FakeRuntime()
      : device_count_(
            static_cast<int>(env_long("TORCH_BACKEND_FAKE_DEVICE_COUNT", 2))),
        capacity_(static_cast<std::size_t>(
                      env_long("TORCH_BACKEND_FAKE_MEMORY_MB", 65536))
                  << 20),
        discrete_(env_long("TORCH_BACKEND_FAKE_DISCRETE", 0) == 1),
        ipc_(env_long("TORCH_BACKEND_FAKE_IPC", 1) != 0),
        used_(device_count_, 0),
        default_streams_(new std::atomic<Stream*>[device_count_]()) {}

  // --- devices ---------------------------------------------------------------
  Status device_count(int* count) override {
    *count = device_count_;
    return kSuccess;
  }

  Status get_device(int* device) override {
    *device = current_device_;
    return kSuccess;
  }

  Status set_device(int device) override {
    if (device < 0 || device >= device_count_) {
      return kInvalidDevice;
    }
    current_device_ = device;
    return kSuccess;
  }

  Status synchronize_device() override {
    FAKE_FAULT_POINT(Operation::SynchronizeDevice, current_device_);
    drain_current_device();
    return kernel_failures().take();
  }

  Status device_properties(int device, DeviceProperties* props) override {
    if (device < 0 || device >= device_count_) {
      return kInvalidDevice;
    }
    props->name = "Fake Device " + std::to_string(device) + " (host memory)";
    props->total_memory = capacity_;
    props->capability = "fake-1.0";
    props->major = 1;
    props->minor = 0;
    props->multi_processor_count = 1;  // one worker thread per stream
    return kSuccess;
  }

  Status mem_get_info(std::size_t* free_bytes,
                      std::size_t* total_bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    *total_bytes = capacity_;
    *free_bytes = capacity_ - used_[current_device_];
    return kSuccess;
  }

  // --- memory ----------------------------------------------------------------
  // Device memory is a shared-memory file mapped into this process, so that
  // another process can map the same memory (ipc_open_handle), as a GPU's
  // memory is mapped by cudaIpcOpenMemHandle.
  Status malloc(void** ptr, std::size_t bytes) override {
    if (bytes == 0) {
      return kInvalidValue;
    }
    FAKE_FAULT_POINT(Operation::Malloc, current_device_);
    const std::size_t rounded = round_up(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    if (rounded > capacity_ - used_[current_device_]) {
      return kOutOfMemory;
    }
    // Out of file descriptors (one per allocation; core caches them, so
    // few): private memory instead, which only sharing refuses.
    int fd = memfd_create("torch_backend_fake", MFD_CLOEXEC);
    void* memory = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(rounded)) == 0) {
      memory =
          mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    } else {
      if (fd >= 0) {
        close(fd);
      }
      fd = -1;
      memory = mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    if (memory == MAP_FAILED) {
      if (fd >= 0) {
        close(fd);
      }
      return kOutOfMemory;
    }
    used_[current_device_] += rounded;
    blocks_[memory] = Block{current_device_, rounded, fd};
    *ptr = memory;
    return kSuccess;
  }

  Status free(void* ptr) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(ptr);
    if (it == blocks_.end()) {
      return kInvalidPointer;
    }
    used_[it->second.device] -= it->second.bytes;
    munmap(ptr, it->second.bytes);
    if (it->second.fd >= 0) {
      close(it->second.fd);
    }
    blocks_.erase(it);
    return kSuccess;
  }

  Status host_malloc(void** ptr, std::size_t bytes) override {
    FAKE_FAULT_POINT(Operation::HostMalloc, -1);
    void* memory = std::aligned_alloc(kAlignment, round_up(bytes));
    if (memory == nullptr) {
      return kOutOfMemory;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    host_blocks_.insert(memory);
    *ptr = memory;
    return kSuccess;
  }

  Status host_free(void* ptr) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (host_blocks_.erase(ptr) == 0) {
      return kInvalidPointer;
    }
    std::free(ptr);
    return kSuccess;
  }

  Status memcpy(void* dst, const void* src, std::size_t bytes,
                CopyKind /*kind*/) override {
    FAKE_FAULT_POINT(Operation::Memcpy, current_device_);
    drain_current_device();
    copy_memory(dst, src, bytes);
    return kernel_failures().take();
  }

  Status memcpy_async(void* dst, const void* src, std::size_t bytes,
                      CopyKind /*kind*/, StreamHandle stream) override {
    FAKE_FAULT_POINT(Operation::MemcpyAsync, resolve(stream)->device);
    resolve(stream)->enqueue([=] { copy_memory(dst, src, bytes); });
    return kSuccess;
  }

  // --- streams ---------------------------------------------------------------
  Status stream_priority_range(int* least, int* greatest) override {
    *least = 0;
    *greatest = -1;
    return kSuccess;
  }

  Status stream_create(StreamHandle* stream, int /*priority*/) override {
    FAKE_FAULT_POINT(Operation::StreamCreate, current_device_);
    auto* created = new Stream(current_device_);
    std::lock_guard<std::mutex> lock(mutex_);
    streams_.push_back(created);
    *stream = created;
    return kSuccess;
  }

  Status stream_destroy(StreamHandle stream) override {
    // Streams are pooled by core and live as long as the process; destroying
    // one only has to make sure its work is done.
    resolve(stream)->synchronize();
    return kSuccess;
  }

  Status stream_query(StreamHandle stream, bool* complete) override {
    FAKE_FAULT_POINT(Operation::StreamQuery, resolve(stream)->device);
    *complete = resolve(stream)->idle();
    return kSuccess;
  }

  Status stream_synchronize(StreamHandle stream) override {
    FAKE_FAULT_POINT(Operation::StreamSynchronize, resolve(stream)->device);
    resolve(stream)->synchronize();
    return kernel_failures().take();
  }

  Status stream_wait_event(StreamHandle stream, EventHandle event) override {
    FAKE_FAULT_POINT(Operation::StreamWaitEvent, resolve(stream)->device);
    EventRef e = share(event);
    std::uint64_t generation = 0;
    {
      std::lock_guard<std::mutex> lock(e->mutex);
      generation = e->recorded;
    }
    if (generation > 0) {
      resolve(stream)->enqueue([e, generation] { e->wait_for(generation); });
    }
    return kSuccess;
  }

  Status stream_sleep(StreamHandle stream, unsigned long us) override {
    resolve(stream)->enqueue(
        [us] { std::this_thread::sleep_for(std::chrono::microseconds(us)); });
    return kSuccess;
  }

  // --- events ----------------------------------------------------------------
  Status event_create(EventHandle* event, bool enable_timing) override {
    FAKE_FAULT_POINT(Operation::EventCreate, current_device_);
    *event = new EventRef(std::make_shared<Event>(enable_timing));
    return kSuccess;
  }

  Status event_destroy(EventHandle event) override {
    delete static_cast<EventRef*>(event);  // queued work keeps its own share
    return kSuccess;
  }

  Status event_record(EventHandle event, StreamHandle stream) override {
    FAKE_FAULT_POINT(Operation::EventRecord, resolve(stream)->device);
    EventRef e = share(event);
    std::uint64_t generation = 0;
    {
      std::lock_guard<std::mutex> lock(e->mutex);
      generation = ++e->recorded;
    }
    resolve(stream)->enqueue_marker(
        [e, generation] { e->complete(generation); });
    return kSuccess;
  }

  Status event_query(EventHandle event, bool* complete) override {
    FAKE_FAULT_POINT(Operation::EventQuery, -1);
    Event& e = event_of(event);
    std::lock_guard<std::mutex> lock(e.mutex);
    *complete = e.completed >= e.recorded;
    return kSuccess;
  }

  Status event_synchronize(EventHandle event) override {
    FAKE_FAULT_POINT(Operation::EventSynchronize, -1);
    Event& e = event_of(event);
    std::uint64_t generation = 0;
    {
      std::lock_guard<std::mutex> lock(e.mutex);
      generation = e.recorded;
    }
    e.wait_for(generation);
    return kernel_failures().take();
  }

  Status event_elapsed_time(float* ms, EventHandle start,
                            EventHandle end) override {
    Event* a = &event_of(start);
    Event* b = &event_of(end);
    if (!a->timing || !b->timing) {
      return kNoTiming;
    }
    std::scoped_lock lock(a->mutex, b->mutex);
    if (a->recorded == 0 || b->recorded == 0 || a->completed < a->recorded ||
        b->completed < b->recorded) {
      return kNotReady;
    }
    *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
    return kSuccess;
  }

  // --- sharing between processes
  // ----------------------------------------------- A handle is (pid, fd, size)
  // of the allocation's shared-memory file; the consumer opens it through
  // /proc/<pid>/fd. TORCH_BACKEND_FAKE_IPC=0 plays a runtime without handles.
  struct FakeIpcHandle {
    std::uint32_t magic;
    std::int32_t pid;
    std::int32_t fd;
    std::uint64_t bytes;
  };
  static constexpr std::uint32_t kIpcMagic = 0xfa4e1bc0;

  Status ipc_get_handle(void* base, torch_backend::IpcHandle* handle) override {
    if (!ipc_) {
      return torch_backend::kNotSupported;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(base);
    if (it == blocks_.end()) {
      return kInvalidPointer;
    }
    if (it->second.fd < 0) {
      return kNotShareable;
    }
    const FakeIpcHandle named{kIpcMagic, static_cast<std::int32_t>(getpid()),
                              it->second.fd, it->second.bytes};
    static_assert(sizeof(named) <= sizeof(handle->bytes));
    std::memcpy(handle->bytes, &named, sizeof(named));
    return kSuccess;
  }

  Status ipc_open_handle(const torch_backend::IpcHandle& handle,
                         void** ptr) override {
    if (!ipc_) {
      return torch_backend::kNotSupported;
    }
    FakeIpcHandle named{};
    std::memcpy(&named, handle.bytes, sizeof(named));
    if (named.magic != kIpcMagic) {
      return kInvalidValue;
    }
    const std::string path = "/proc/" + std::to_string(named.pid) + "/fd/" +
                             std::to_string(named.fd);
    const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      return kIpcGone;
    }
    void* memory =
        mmap(nullptr, named.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);  // the mapping keeps the memory
    if (memory == MAP_FAILED) {
      return kIpcGone;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    opened_[memory] = named.bytes;
    *ptr = memory;
    return kSuccess;
  }

  Status ipc_close_handle(void* ptr) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = opened_.find(ptr);
    if (it == opened_.end()) {
      return kInvalidPointer;
    }
    munmap(ptr, it->second);
    opened_.erase(it);
    return kSuccess;
  }

  // --- errors ----------------------------------------------------------------
  std::string error_text(Status status) override {
    switch (status) {
      case kSuccess:
        return "no error";
      case kOutOfMemory:
        return "out of fake device memory";
      case kInvalidDevice:
        return "invalid device ordinal";
      case kInvalidPointer:
        return "pointer was not allocated by the fake runtime";
      case kInvalidValue:
        return "invalid argument";
      case kNotReady:
        return "event not recorded or its work not complete yet";
      case kNoTiming:
        return "events were created without enable_timing=True";
      case fake::kInjectedFault:
        return "injected fault (TORCH_BACKEND_FAKE_FAULTS or "
               "torch_backend_fake.faults)";
      case kIpcGone:
        return "the shared device memory is gone (the producing process "
               "freed it or exited; keep the tensor alive while others use "
               "it)";
      case kNotShareable:
        return "this allocation is not shareable: it was made when the "
               "process had no file descriptor left (raise ulimit -n)";
      case kKernelFailed:
        return "a kernel failed on the device: " + KernelFailures::reported_;
      case fake::kDeviceLost:
        return "device lost (injected by "
               "torch_backend_fake.faults.lose_device)";
      default:
        return "unknown fake runtime status " + std::to_string(status);
    }
  }

  bool is_out_of_memory(Status status) override {
    return status == kOutOfMemory;
  }

  torch_backend::Capabilities capabilities() override {
    return {/*host_addressable_memory=*/!discrete_};
  }

 private:
  struct Block {
    int device;
    std::size_t bytes;
    int fd;  // the shared-memory file behind it; -1: private memory
  };

  static std::size_t round_up(std::size_t bytes) {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }

 public:
  // A kernel launch; an injected "kernel" fault makes the kernel fail on
  // the stream instead of running, as a faulting device kernel would.
  void enqueue_kernel(StreamHandle stream, std::function<void()> work) {
    Stream* target = resolve(stream);
    if (fake::faults().check(Operation::Kernel, target->device) != 0) {
      work = [] {
        throw std::runtime_error(
            "injected fault (TORCH_BACKEND_FAKE_FAULTS or "
            "torch_backend_fake.faults)");
      };
    }
    target->enqueue(std::move(work));
  }

 private:
  Stream* resolve(StreamHandle handle) {
    if (handle != nullptr) {
      return static_cast<Stream*>(handle);
    }
    // Every kernel of the CPU fallback synchronises the default stream:
    // once created, it is found without a lock.
    std::atomic<Stream*>& slot = default_streams_[current_device_];
    if (Stream* stream = slot.load(std::memory_order_acquire)) {
      return stream;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    Stream* stream = slot.load(std::memory_order_relaxed);
    if (stream == nullptr) {
      stream = new Stream(current_device_);
      streams_.push_back(stream);
      slot.store(stream, std::memory_order_release);
    }
    return stream;
  }

  void drain_current_device() {
    for (Stream* stream : streams_of(current_device_)) {
      stream->synchronize();
    }
  }

  std::vector<Stream*> streams_of(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Stream*> found;
    for (Stream* stream : streams_) {
      if (stream->device == device) {
        found.push_back(stream);
      }
    }
    return found;
  }

  static thread_local int current_device_;
  const int device_count_;
  const std::size_t capacity_;
  const bool discrete_;
  const bool ipc_;
  std::mutex mutex_;
  std::vector<std::size_t> used_;
  std::unordered_map<void*, Block> blocks_;
  std::unordered_map<void*, std::size_t>
      opened_;  // mapped from other processes
  std::unordered_set<void*> host_blocks_;
  std::unique_ptr<std::atomic<Stream*>[]> default_streams_;
  std::vector<Stream*> streams_;
};

thread_local int FakeRuntime::current_device_ = 0;

}  // namespace

TORCH_BACKEND_DEFINE_DEVICE_RUNTIME(FakeRuntime)

// For fake's device kernels (FakeDeviceKernels.cpp): runs `work` on the
// worker thread of `stream` (null: the current device's default stream), in
// order with everything else enqueued there, as a real device would.
void fake_enqueue(torch_backend::StreamHandle stream,
                  std::function<void()> work) {
  int abi = 0;
  static_cast<FakeRuntime*>(torch_backend_device_runtime(&abi))
      ->enqueue_kernel(stream, std::move(work));
}
