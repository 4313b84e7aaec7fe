// The simulated hardware behind the `fake` device: what a driver and a chip
// would provide, so that FakeDevice.cpp reads like CudaDevice.cpp (one
// call per device symbol).
//  - Device memory is host memory owned by this machine (never the CPU
//    allocator), with a per-device capacity, so device and CPU tensors are
//    genuinely different storages and an oversized allocation really fails.
//    Each allocation is a shared-memory file, so another process can map it.
//  - Each stream is a worker thread running its work in order, so
//    asynchronous copies complete later, events complete when the stream
//    reaches them and cross-stream waits block the waiting stream only.
//  - A kernel that fails on a stream's worker (fake's kernels call ATen's CPU
//    kernels, which may throw) fails asynchronously, as a CUDA kernel does:
//    the error is kept and reported by the next call that synchronises with
//    the device (stream, event or device synchronize, a blocking copy), once.
//
// Environment:
//   TORCH_BACKEND_FAKE_DEVICE_COUNT  number of devices (default 2)
//   TORCH_BACKEND_FAKE_MEMORY_MB     capacity of each device (default 65536)
//   TORCH_BACKEND_FAKE_DISCRETE      1: memory host code may not address, as
//                                    a discrete accelerator's
//   TORCH_BACKEND_FAKE_IPC           0: no inter-process memory handles
//   TORCH_BACKEND_FAKE_GRAPHS        0: no stream capture (a runtime without
//                                    the graph symbols)
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <torch_backend/DeviceRuntime.h>

#include "FaultInjection.h"

namespace fake {

using torch_backend::Status;
using Clock = std::chrono::steady_clock;

// The machine's status codes (FaultInjection.h adds 7 and 8, and gives out of
// memory its value).
enum Code : Status {
  kOutOfMemory = kOutOfMemoryStatus,
  kInvalidDevice = 2,
  kInvalidPointer = 3,
  kInvalidValue = 4,
  kNotReady = 5,
  kNoTiming = 6,
  kKernelFailed = 9,
  kIpcGone = 10,
  kNotShareable = 11,
  kCaptureRefused =
      12,  // a call a capture cannot hold (cudaErrorStreamCapture*)
};

// The first kernel failure not yet reported, from any stream.
class KernelFailures {
 public:
  void record(std::string what);
  // kKernelFailed (once per failure) with its message kept for
  // reported_message() on this thread; kSuccess when none is pending.
  Status take();
  static const std::string& reported_message();

 private:
  std::mutex mutex_;
  std::atomic<bool> pending_{false};
  std::string message_;
};

KernelFailures& kernel_failures();

// The copy engine: every core for large copies, as the CPU's own copy_ does,
// so host<->device bandwidth matches host<->host.
void copy_memory(void* dst, const void* src, std::size_t bytes);

class Stream;

// A capture (graphs): the work streams enqueued while capturing, in the order
// the host enqueued it, which every cross-stream wait the host issued
// respects; a launch replays it in that order as one item of a stream, so it
// costs the host one enqueue. Streams that waited for an event recorded
// while capturing joined it (as in CUDA) and record into it too.
struct Recording {
  explicit Recording(Stream* origin) : origin(origin) {}
  void add(std::function<void()> work);

  Stream* const origin;
  std::mutex mutex;
  std::vector<std::function<void()>> work;
  std::vector<Stream*> streams;  // the origin and those that joined
  bool ended = false;
  bool refused = false;  // a call the capture cannot hold was made
};
using RecordingRef = std::shared_ptr<Recording>;

// A captured graph, launchable any number of times.
struct Graph {
  std::vector<std::function<void()>> work;
};

// Work items of one stream, run in order by its own worker thread.
class Stream {
 public:
  // The worker lives as long as the process: never joined (joining from a
  // static destructor at exit would race the interpreter's teardown). Core
  // drains every stream before finalisation and enqueues nothing after it
  // (shutdown contract in DeviceRuntime.h).
  explicit Stream(int device);

  void enqueue(std::function<void()> work) { push({std::move(work), {}}); }
  // Runs a kernel on the calling thread if the stream has nothing queued or
  // running (TORCH_BACKEND_FAKE_INLINE_KERNELS=1); false: enqueue it. Work
  // enqueued meanwhile by other threads waits behind it, in stream order.
  bool try_run_inline(const std::function<void()>& work);
  // A marker's signal (an event's completion) gets the call that counts the
  // marker done on the stream, and makes it inside the lock that publishes
  // its own effect: no thread then sees the stream idle (synchronize
  // returned) while the event still reads incomplete, nor the reverse.
  using Signal = std::function<void(const std::function<void()>& count_done)>;
  // Runs `signal` once all earlier work is done (event semantics).
  void enqueue_marker(Signal signal) { push({{}, std::move(signal)}); }

  // Counters change under the mutex but are read without it: an idle
  // stream (the common case: the CPU fallback synchronises before every
  // kernel) answers without locking. The acquire pairs with the worker's
  // increment after the work, so its writes are visible.
  bool idle() const {
    return completed_.load(std::memory_order_acquire) ==
           enqueued_.load(std::memory_order_acquire);
  }
  void synchronize();

  // The capture this stream records into, or null (then work runs).
  RecordingRef recording();
  void set_recording(RecordingRef recording);
  // Enqueues every item of `graph`, in order, as one item.
  void launch(std::shared_ptr<const Graph> graph);

  const int device;

 private:
  struct Item {
    std::function<void()> work;
    Signal signal;  // set: a marker
  };

  void push(Item item);
  void run();
  // Waits (the mutex held) until the queue has work: polls briefly before
  // sleeping, as a device polls its launch queue, so that a stream fed
  // kernel after kernel costs its host no wake-up call per kernel.
  void wait_for_work(std::unique_lock<std::mutex>& lock);

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  std::deque<Item> queue_;
  bool worker_asleep_ = false;  // under mutex_: push() wakes it
  RecordingRef recording_;      // under mutex_
  std::atomic<std::uint64_t> enqueued_{0};
  std::atomic<std::uint64_t> completed_{0};
  std::thread worker_;
};

// Completion of the work a stream had when the event was last recorded.
struct Event {
  explicit Event(bool timing) : timing(timing) {}

  // Marks `generation` complete; `count_done` runs under the same lock.
  void complete(std::uint64_t generation,
                const std::function<void()>& count_done);
  void wait_for(std::uint64_t generation);
  // Records the work `stream` has so far; returns when that is enqueued. On
  // a capturing stream it is recorded at each launch of the graph instead
  // (as in CUDA).
  void record_on(Stream& stream, const std::shared_ptr<Event>& self);
  // The capture it was last recorded in, if that still exists.
  std::shared_ptr<Recording> capture();
  // The generation last recorded (0: never).
  std::uint64_t last_recorded();

  const bool timing;
  std::mutex mutex;
  std::condition_variable done;
  std::uint64_t recorded = 0;
  std::uint64_t completed = 0;
  Clock::time_point when;
  // The capture it was last recorded in (recorded while capturing, it is
  // recorded again at each launch of the graph instead).
  std::weak_ptr<Recording> captured_in;
};

// Whether `event` was last recorded in a capture that is still open (its
// completion then exists only in the graph to come).
bool in_open_capture(Event& event);

// Streams may still wait on or complete an event after its handle was
// destroyed (allowed in CUDA too), so queued work shares ownership of it.
using EventRef = std::shared_ptr<Event>;

// The devices: their memory, streams and configuration.
class Machine {
 public:
  static Machine& get();

  int device_count() const { return device_count_; }
  std::size_t capacity() const { return capacity_; }
  bool discrete() const { return discrete_; }
  // Device kernels run on the calling thread when their stream is idle:
  // what is left of an op's time is core's host cost, without the handoff
  // to a stream's worker (the benchmarks' measure of it).
  bool inline_kernels() const { return inline_kernels_; }
  bool ipc() const { return ipc_; }
  bool graphs() const { return graphs_; }

  // --- memory: a shared-memory file per allocation -------------------------
  Status allocate(int device, std::size_t bytes, void** ptr);
  Status release(void* ptr);
  std::size_t used(int device);
  Status host_allocate(std::size_t bytes, void** ptr);
  Status host_release(void* ptr);
  Status share(void* base, torch_backend::IpcHandle* handle);
  Status open_shared(const torch_backend::IpcHandle& handle, void** ptr);
  Status close_shared(void* ptr);

  // --- virtual memory: address ranges whose pages map physical memory ------
  // Reserved ranges are inaccessible anonymous memory; a physical allocation
  // is a shared-memory file counted against its device's capacity, mapped
  // over part of a range with MAP_FIXED.
  static constexpr std::size_t kPageBytes = std::size_t{2} << 20;
  Status reserve(std::size_t bytes, void** base);
  Status unreserve(void* base, std::size_t bytes);
  Status create_physical(int device, std::size_t bytes,
                         torch_backend::PhysicalHandle* handle);
  Status destroy_physical(torch_backend::PhysicalHandle handle);
  Status map(void* address, std::size_t bytes,
             torch_backend::PhysicalHandle handle);
  Status unmap(void* address, std::size_t bytes);

  // --- streams
  // ----------------------------------------------------------------
  Stream* create_stream(int device);
  // The stream a handle names; null: `device`'s default stream.
  Stream* stream(torch_backend::StreamHandle handle, int device);
  // Waits for every stream of `device`.
  void drain(int device);

  // --- captures (graphs) -----------------------------------------------------
  Status begin_capture(Stream& stream);
  // kCaptureRefused (and no graph) if a refused call was made meanwhile.
  Status end_capture(Stream& stream, std::shared_ptr<const Graph>* graph);
  // A call that waits for `device`'s streams (or for `stream`, when given),
  // which no capture can hold: kCaptureRefused, and the capture fails.
  Status refuse_if_capturing(int device, Stream* stream = nullptr);
  // `stream` waited for an event recorded in `recording`: it joins the
  // capture if it is still open (true), as in CUDA.
  bool join_capture(Stream& stream, const RecordingRef& recording);

 private:
  struct Block {
    int device;
    std::size_t bytes;
    int fd;  // the shared-memory file behind it; -1: private memory
  };

  struct Physical {
    int device;
    std::size_t bytes;
    int fd;
  };

  Machine();
  std::vector<Stream*> streams_of(int device);
  // Whether [address, address + bytes) lies in one reserved range.
  bool reserved(const void* address, std::size_t bytes);

  const int device_count_;
  const std::size_t capacity_;
  const bool discrete_;
  const bool inline_kernels_;
  const bool ipc_;
  const bool graphs_;
  std::mutex mutex_;
  std::vector<std::size_t> used_;
  std::unordered_map<void*, Block> blocks_;
  std::unordered_map<void*, std::size_t> opened_;  // from other processes
  std::unordered_set<void*> host_blocks_;
  std::unordered_map<void*, std::size_t> reservations_;
  std::unordered_set<Physical*> physical_;
  std::unique_ptr<std::atomic<Stream*>[]> default_streams_;
  std::vector<Stream*> streams_;
  std::atomic<int> captures_{0};  // in progress: the checks' fast path
};

// The calling thread's current device (the state cudaSetDevice sets).
int& current_device();

// For fake's device kernels: runs `work` on the worker of `stream` (null: the
// current device's default stream), in order with everything else enqueued
// there, as a real device would. An injected "kernel" fault makes the kernel
// fail on the stream instead of running.
void enqueue_kernel(torch_backend::StreamHandle stream,
                    std::function<void()> work);

// While one lives, the kernels its thread enqueues are collected instead;
// submit() enqueues them as one kernel: fake's multi-tensor kernels, one
// launch per list as a device's. Dropped unsubmitted, it enqueues nothing.
class KernelBatch {
 public:
  KernelBatch();
  ~KernelBatch();
  KernelBatch(const KernelBatch&) = delete;
  KernelBatch& operator=(const KernelBatch&) = delete;

  void add(std::function<void()> work) { work_.push_back(std::move(work)); }
  void submit(torch_backend::StreamHandle stream);

 private:
  std::vector<std::function<void()>> work_;
  KernelBatch* outer_;
};

}  // namespace fake
