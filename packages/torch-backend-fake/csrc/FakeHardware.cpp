#include "FakeHardware.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "FaultInjection.h"

namespace fake {
namespace {

using torch_backend::kSuccess;

thread_local std::string reported_;

constexpr std::size_t kAlignment = 64;

std::size_t round_up(std::size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
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

// A failing kernel must not end the worker (std::terminate): its error is
// kept for the next synchronising call, and later work still runs.
void run_kernel(const std::function<void()>& work) {
  try {
    work();
  } catch (const std::exception& error) {
    kernel_failures().record(error.what());
  } catch (...) {
    kernel_failures().record("unknown exception");
  }
}

// A handle is (pid, fd, size) of the allocation's shared-memory file; the
// consumer opens it through /proc/<pid>/fd.
struct IpcName {
  std::uint32_t magic;
  std::int32_t pid;
  std::int32_t fd;
  std::uint64_t bytes;
};
constexpr std::uint32_t kIpcMagic = 0xfa4e1bc0;

}  // namespace

// --- kernel failures ---------------------------------------------------------

void KernelFailures::record(std::string what) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pending_) {
    message_ = std::move(what);
    pending_ = true;
  }
}

Status KernelFailures::take() {
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

const std::string& KernelFailures::reported_message() { return reported_; }

KernelFailures& kernel_failures() {
  static KernelFailures* failures = new KernelFailures;  // outlives workers
  return *failures;
}

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

// --- streams -----------------------------------------------------------------

Stream::Stream(int device) : device(device), worker_([this] { run(); }) {
  worker_.detach();
}

void Stream::synchronize() {
  if (idle()) {
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  const std::uint64_t target = enqueued_;
  work_done_.wait(lock, [&] { return completed_ >= target; });
}

bool Stream::try_run_inline(const std::function<void()>& work) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (recording_ || !queue_.empty() || completed_ != enqueued_) {
    return false;
  }
  // Counted as queued while it runs, so that the stream reads busy; the
  // lock makes pushes from other threads wait, which keeps stream order.
  ++enqueued_;
  run_kernel(work);
  ++completed_;
  work_done_.notify_all();
  return true;
}

void Stream::push(Item item) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (recording_) {
    if (item.work) {
      recording_->add(std::move(item.work));
    } else {  // a marker replays with nothing of this stream's to count
      recording_->add([signal = std::move(item.signal)] { signal([] {}); });
    }
    return;
  }
  queue_.push_back(std::move(item));
  ++enqueued_;
  if (worker_asleep_) {
    work_ready_.notify_one();
  }
}

void Stream::wait_for_work(std::unique_lock<std::mutex>& lock) {
  constexpr auto kPollFor = std::chrono::microseconds(50);
  if (queue_.empty()) {
    // Everything taken so far is counted once the queue is empty: new work
    // shows as enqueued_ moving past this.
    const std::uint64_t seen = enqueued_.load(std::memory_order_relaxed);
    lock.unlock();
    const Clock::time_point until = Clock::now() + kPollFor;
    while (enqueued_.load(std::memory_order_acquire) == seen &&
           Clock::now() < until) {
      std::this_thread::yield();  // lets the cores' other threads run
    }
    lock.lock();
  }
  worker_asleep_ = true;
  work_ready_.wait(lock, [&] { return !queue_.empty(); });
  worker_asleep_ = false;
}

void Stream::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wait_for_work(lock);
    Item item = std::move(queue_.front());
    queue_.pop_front();
    if (item.signal) {
      lock.unlock();
      item.signal([this] { ++completed_; });
      lock.lock();
      work_done_.notify_all();
      continue;
    }
    lock.unlock();
    run_kernel(item.work);
    lock.lock();
    ++completed_;
    work_done_.notify_all();
  }
}

RecordingRef Stream::recording() {
  std::lock_guard<std::mutex> lock(mutex_);
  return recording_;
}

void Stream::set_recording(RecordingRef recording) {
  std::lock_guard<std::mutex> lock(mutex_);
  recording_ = std::move(recording);
}

void Stream::launch(std::shared_ptr<const Graph> graph) {
  enqueue([graph = std::move(graph)] {
    for (const std::function<void()>& work : graph->work) {
      run_kernel(work);
    }
  });
}

void Recording::add(std::function<void()> item) {
  std::lock_guard<std::mutex> lock(mutex);
  work.push_back(std::move(item));
}

// --- events ------------------------------------------------------------------

void Event::complete(std::uint64_t generation,
                     const std::function<void()>& count_done) {
  std::lock_guard<std::mutex> lock(mutex);
  count_done();
  completed = std::max(completed, generation);
  when = Clock::now();
  done.notify_all();
}

void Event::wait_for(std::uint64_t generation) {
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, [&] { return completed >= generation; });
}

void Event::record_on(Stream& stream, const std::shared_ptr<Event>& self) {
  RecordingRef recording = stream.recording();
  std::uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    captured_in = recording;
    if (recording == nullptr) {
      generation = ++recorded;
    }
  }
  if (recording != nullptr) {
    recording->add([self] {
      std::uint64_t launched = 0;
      {
        std::lock_guard<std::mutex> lock(self->mutex);
        launched = ++self->recorded;
      }
      self->complete(launched, [] {});
    });
    return;
  }
  stream.enqueue_marker(
      [self, generation](const std::function<void()>& count_done) {
        self->complete(generation, count_done);
      });
}

std::uint64_t Event::last_recorded() {
  std::lock_guard<std::mutex> lock(mutex);
  return recorded;
}

// --- the machine -------------------------------------------------------------

int& current_device() {
  static thread_local int device = 0;
  return device;
}

Machine& Machine::get() {
  static Machine* machine = new Machine;  // never destroyed (shutdown contract)
  return *machine;
}

Machine::Machine()
    : device_count_(
          static_cast<int>(env_long("TORCH_BACKEND_FAKE_DEVICE_COUNT", 2))),
      capacity_(static_cast<std::size_t>(
                    env_long("TORCH_BACKEND_FAKE_MEMORY_MB", 65536))
                << 20),
      discrete_(env_long("TORCH_BACKEND_FAKE_DISCRETE", 0) == 1),
      inline_kernels_(env_long("TORCH_BACKEND_FAKE_INLINE_KERNELS", 0) == 1),
      ipc_(env_long("TORCH_BACKEND_FAKE_IPC", 1) != 0),
      graphs_(env_long("TORCH_BACKEND_FAKE_GRAPHS", 1) != 0),
      used_(device_count_, 0),
      default_streams_(new std::atomic<Stream*>[device_count_]()) {}

Status Machine::allocate(int device, std::size_t bytes, void** ptr) {
  if (bytes == 0) {
    return kInvalidValue;
  }
  const std::size_t rounded = round_up(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (rounded > capacity_ - used_[device]) {
    return kOutOfMemory;
  }
  // Out of file descriptors (one per allocation; core caches them, so few):
  // private memory instead, which only sharing refuses.
  int fd = memfd_create("torch_backend_fake", MFD_CLOEXEC);
  void* memory = MAP_FAILED;
  if (fd >= 0 && ftruncate(fd, static_cast<off_t>(rounded)) == 0) {
    memory = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
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
  used_[device] += rounded;
  blocks_[memory] = Block{device, rounded, fd};
  *ptr = memory;
  return kSuccess;
}

Status Machine::release(void* ptr) {
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

std::size_t Machine::used(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_[device];
}

Status Machine::reserve(std::size_t bytes, void** base) {
  if (bytes == 0 || bytes % kPageBytes != 0) {
    return kInvalidValue;
  }
  void* memory = mmap(nullptr, bytes, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    return kOutOfMemory;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  reservations_[memory] = bytes;
  *base = memory;
  return kSuccess;
}

Status Machine::unreserve(void* base, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = reservations_.find(base);
  if (it == reservations_.end() || it->second != bytes) {
    return kInvalidPointer;
  }
  munmap(base, bytes);
  reservations_.erase(it);
  return kSuccess;
}

bool Machine::reserved(const void* address, std::size_t bytes) {
  const auto* start = static_cast<const char*>(address);
  for (const auto& [base, size] : reservations_) {
    const auto* first = static_cast<const char*>(base);
    if (start >= first && start + bytes <= first + size) {
      return true;
    }
  }
  return false;
}

Status Machine::create_physical(int device, std::size_t bytes,
                                torch_backend::PhysicalHandle* handle) {
  if (bytes == 0 || bytes % kPageBytes != 0) {
    return kInvalidValue;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > capacity_ - used_[device]) {
    return kOutOfMemory;
  }
  const int fd = memfd_create("torch_backend_fake_physical", MFD_CLOEXEC);
  if (fd < 0) {
    return kOutOfMemory;
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return kOutOfMemory;
  }
  auto* physical = new Physical{device, bytes, fd};
  physical_.insert(physical);
  used_[device] += bytes;
  *handle = physical;
  return kSuccess;
}

Status Machine::destroy_physical(torch_backend::PhysicalHandle handle) {
  auto* physical = static_cast<Physical*>(handle);
  std::lock_guard<std::mutex> lock(mutex_);
  if (physical_.erase(physical) == 0) {
    return kInvalidValue;
  }
  // Pages still mapped keep the file's memory until unmapped, as a driver
  // keeps a mapped allocation; the device's count drops now.
  used_[physical->device] -= physical->bytes;
  close(physical->fd);
  delete physical;
  return kSuccess;
}

Status Machine::map(void* address, std::size_t bytes,
                    torch_backend::PhysicalHandle handle) {
  auto* physical = static_cast<Physical*>(handle);
  std::lock_guard<std::mutex> lock(mutex_);
  if (physical_.count(physical) == 0 || physical->bytes != bytes) {
    return kInvalidValue;
  }
  if (!reserved(address, bytes)) {
    return kInvalidPointer;
  }
  void* mapped = mmap(address, bytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_FIXED, physical->fd, 0);
  return mapped == address ? kSuccess : kOutOfMemory;
}

Status Machine::unmap(void* address, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!reserved(address, bytes)) {
    return kInvalidPointer;
  }
  // Back to reserved: inaccessible, holding no memory.
  void* back =
      mmap(address, bytes, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  return back == address ? kSuccess : kInvalidValue;
}

Status Machine::host_allocate(std::size_t bytes, void** ptr) {
  void* memory = std::aligned_alloc(kAlignment, round_up(bytes));
  if (memory == nullptr) {
    return kOutOfMemory;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  host_blocks_.insert(memory);
  *ptr = memory;
  return kSuccess;
}

Status Machine::host_release(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (host_blocks_.erase(ptr) == 0) {
    return kInvalidPointer;
  }
  std::free(ptr);
  return kSuccess;
}

Status Machine::share(void* base, torch_backend::IpcHandle* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(base);
  if (it == blocks_.end()) {
    return kInvalidPointer;
  }
  if (it->second.fd < 0) {
    return kNotShareable;
  }
  const IpcName named{kIpcMagic, static_cast<std::int32_t>(getpid()),
                      it->second.fd, it->second.bytes};
  static_assert(sizeof(named) <= sizeof(handle->bytes));
  std::memcpy(handle->bytes, &named, sizeof(named));
  return kSuccess;
}

Status Machine::open_shared(const torch_backend::IpcHandle& handle,
                            void** ptr) {
  IpcName named{};
  std::memcpy(&named, handle.bytes, sizeof(named));
  if (named.magic != kIpcMagic) {
    return kInvalidValue;
  }
  const std::string path =
      "/proc/" + std::to_string(named.pid) + "/fd/" + std::to_string(named.fd);
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

Status Machine::close_shared(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = opened_.find(ptr);
  if (it == opened_.end()) {
    return kInvalidPointer;
  }
  munmap(ptr, it->second);
  opened_.erase(it);
  return kSuccess;
}

Stream* Machine::create_stream(int device) {
  auto* created = new Stream(device);
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.push_back(created);
  return created;
}

Stream* Machine::stream(torch_backend::StreamHandle handle, int device) {
  if (handle != nullptr) {
    return static_cast<Stream*>(handle);
  }
  // Every kernel of the CPU fallback synchronises the default stream: once
  // created, it is found without a lock.
  std::atomic<Stream*>& slot = default_streams_[device];
  if (Stream* found = slot.load(std::memory_order_acquire)) {
    return found;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  Stream* found = slot.load(std::memory_order_relaxed);
  if (found == nullptr) {
    found = new Stream(device);
    streams_.push_back(found);
    slot.store(found, std::memory_order_release);
  }
  return found;
}

void Machine::drain(int device) {
  for (Stream* stream : streams_of(device)) {
    stream->synchronize();
  }
}

Status Machine::begin_capture(Stream& stream) {
  if (stream.recording() != nullptr) {
    return kInvalidValue;  // already capturing
  }
  auto recording = std::make_shared<Recording>(&stream);
  recording->streams.push_back(&stream);
  stream.set_recording(std::move(recording));
  captures_.fetch_add(1);
  return kSuccess;
}

Status Machine::end_capture(Stream& stream,
                            std::shared_ptr<const Graph>* graph) {
  RecordingRef recording = stream.recording();
  if (recording == nullptr || recording->origin != &stream) {
    return kInvalidValue;  // not the stream that began a capture
  }
  std::vector<Stream*> joined;
  auto captured = std::make_shared<Graph>();
  bool refused = false;
  {
    std::lock_guard<std::mutex> lock(recording->mutex);
    recording->ended = true;
    joined = recording->streams;
    captured->work = std::move(recording->work);
    refused = recording->refused;
  }
  for (Stream* member : joined) {
    member->set_recording(nullptr);
  }
  captures_.fetch_sub(1);
  if (refused) {
    return kCaptureRefused;
  }
  *graph = std::move(captured);
  return kSuccess;
}

bool Machine::join_capture(Stream& stream, const RecordingRef& recording) {
  {
    std::lock_guard<std::mutex> lock(recording->mutex);
    if (recording->ended) {
      return false;
    }
    if (std::find(recording->streams.begin(), recording->streams.end(),
                  &stream) == recording->streams.end()) {
      recording->streams.push_back(&stream);
    }
  }
  stream.set_recording(recording);
  return true;
}

Status Machine::refuse_if_capturing(int device, Stream* stream) {
  if (captures_.load() == 0) {
    return kSuccess;
  }
  const std::vector<Stream*> candidates =
      stream != nullptr ? std::vector<Stream*>{stream} : streams_of(device);
  for (Stream* candidate : candidates) {
    if (RecordingRef recording = candidate->recording()) {
      std::lock_guard<std::mutex> lock(recording->mutex);
      recording->refused = true;
      return kCaptureRefused;
    }
  }
  return kSuccess;
}

RecordingRef Event::capture() {
  std::lock_guard<std::mutex> lock(mutex);
  return captured_in.lock();
}

bool in_open_capture(Event& event) {
  const RecordingRef recording = event.capture();
  if (recording == nullptr) {
    return false;
  }
  std::lock_guard<std::mutex> lock(recording->mutex);
  return !recording->ended;
}

std::vector<Stream*> Machine::streams_of(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Stream*> found;
  for (Stream* stream : streams_) {
    if (stream->device == device) {
      found.push_back(stream);
    }
  }
  return found;
}

namespace {
thread_local KernelBatch* collecting = nullptr;
}  // namespace

KernelBatch::KernelBatch() : outer_(collecting) { collecting = this; }
KernelBatch::~KernelBatch() { collecting = outer_; }

void KernelBatch::submit(torch_backend::StreamHandle stream) {
  collecting = outer_;
  enqueue_kernel(stream, [work = std::move(work_)] {
    for (const std::function<void()>& kernel : work) {
      kernel();
    }
  });
}

void enqueue_kernel(torch_backend::StreamHandle handle,
                    std::function<void()> work) {
  if (collecting != nullptr) {
    collecting->add(std::move(work));
    return;
  }
  Stream* target = Machine::get().stream(handle, current_device());
  if (faults().check(Operation::Kernel, target->device) != 0) {
    work = [] {
      throw std::runtime_error(
          "injected fault (TORCH_BACKEND_FAKE_FAULTS or "
          "torch_backend_fake.faults)");
    };
  }
  if (Machine::get().inline_kernels() && target->try_run_inline(work)) {
    return;
  }
  target->enqueue(std::move(work));
}

}  // namespace fake
