#include "HostAllocator.h"

#include <deque>
#include <map>
#include <mutex>
#include <unordered_set>

#include <c10/core/DeviceGuard.h>
#include <c10/util/llvmMathExtras.h>

#include <torch_backend/Runtime.h>

#include "../runtime/Streams.h"
#include "../runtime/Warn.h"
#include "StreamUse.h"

namespace torch_backend {
namespace {

struct HostBlock {
  size_t size = 0;
  bool allocated = false;
  int pending_events = 0;
  std::unordered_set<c10::Stream> streams;
};

// Blocks are power-of-two sized and reused once free and no stream still
// reads or writes them.
class HostCachingAllocator final : public at::HostAllocator {
 public:
  at::DataPtr allocate(size_t bytes) override {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (bytes == 0) {
      return {nullptr, nullptr, &release, cpu};
    }
    const size_t size = c10::llvm::PowerOf2Ceil(std::max<size_t>(bytes, 512));
    std::lock_guard<std::mutex> lock(mutex_);
    process_events();
    void* ptr = nullptr;
    auto free_it = free_.find(size);
    if (free_it != free_.end()) {
      ptr = free_it->second;
      free_.erase(free_it);
    } else {
      TORCH_BACKEND_CHECK(active_runtime().host_malloc(&ptr, size));
      blocks_[ptr].size = size;
      stats_.num_host_alloc += 1;
      stats_.allocations.increase(1);
      stats_.allocated_bytes.increase(size);
    }
    blocks_[ptr].allocated = true;
    stats_.active_requests.increase(1);
    stats_.active_bytes.increase(size);
    return {ptr, ptr, &release, cpu};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  void copy_data(void* dest, const void* src, size_t count) const override {
    std::memcpy(dest, src, count);
  }

  bool record_event(void* ptr, void* /*ctx*/, c10::Stream stream) override {
    return record_use(ptr, stream);
  }

  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mutex_);
    wait_events();
    while (!free_.empty()) {
      auto [size, ptr] = *free_.begin();
      TORCH_BACKEND_CHECK(active_runtime().host_free(ptr));
      free_.erase(free_.begin());  // only once freed: a failure keeps it cached
      stats_.num_host_free += 1;
      stats_.allocations.decrease(1);
      stats_.allocated_bytes.decrease(size);
      blocks_.erase(ptr);
    }
  }

  at::HostStats get_stats() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void reset_accumulated_stats() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto* stat : {&stats_.active_requests, &stats_.active_bytes,
                       &stats_.allocations, &stats_.allocated_bytes}) {
      stat->reset_accumulated();
    }
    stats_.num_host_alloc = 0;
    stats_.num_host_free = 0;
  }

  void reset_peak_stats() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto* stat : {&stats_.active_requests, &stats_.active_bytes,
                       &stats_.allocations, &stats_.allocated_bytes}) {
      stat->reset_peak();
    }
  }

  bool contains(const void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    return find_block(ptr) != nullptr;
  }

  bool record_use(const void* ptr, const c10::Stream& stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    HostBlock* block = find_block(ptr);
    if (block == nullptr) {
      return false;
    }
    block->streams.insert(stream);
    return true;
  }

  void free_block(void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    HostBlock& block = blocks_.at(ptr);
    block.allocated = false;
    stats_.active_requests.decrease(1);
    stats_.active_bytes.decrease(block.size);
    DeviceRuntime& runtime = active_runtime();
    try {
      for (const c10::Stream& stream : block.streams) {
        if (EventHandle event = record_stream_use(runtime, stream, nullptr)) {
          pending_.emplace_back(event, ptr);
          block.pending_events += 1;
        }
      }
    } catch (...) {
      // No event and no wait (a lost device): a copy may still read or
      // write this memory, so it is withdrawn for good.
      block.streams.clear();
      block.pending_events += 1;
      throw;
    }
    block.streams.clear();
    if (block.pending_events == 0) {
      free_.emplace(block.size, ptr);
    }
  }

 private:
  static void release(void* ptr);

  // The live block whose range holds `ptr` (views may point inside it).
  HostBlock* find_block(const void* ptr) {
    auto it = blocks_.upper_bound(const_cast<void*>(ptr));
    if (it == blocks_.begin()) {
      return nullptr;
    }
    --it;
    const auto* base = static_cast<const char*>(it->first);
    if (!it->second.allocated ||
        static_cast<const char*>(ptr) >= base + it->second.size) {
      return nullptr;
    }
    return &it->second;
  }

  void retire(EventHandle event, void* ptr) {
    TORCH_BACKEND_CHECK(active_runtime().event_destroy(event));
    HostBlock& block = blocks_.at(ptr);
    if (--block.pending_events == 0 && !block.allocated) {
      free_.emplace(block.size, ptr);
    }
  }

  void process_events() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      bool complete = false;
      TORCH_BACKEND_CHECK(active_runtime().event_query(it->first, &complete));
      if (!complete) {
        ++it;
        continue;
      }
      retire(it->first, it->second);
      it = pending_.erase(it);
    }
  }

  void wait_events() {
    // Each event leaves the list as it is retired: a failure part-way leaves
    // the rest pending, never an event retired twice.
    while (!pending_.empty()) {
      auto [event, ptr] = pending_.front();
      TORCH_BACKEND_CHECK(active_runtime().event_synchronize(event));
      pending_.pop_front();
      retire(event, ptr);
    }
  }

  std::mutex mutex_;
  std::map<void*, HostBlock> blocks_;
  std::multimap<size_t, void*> free_;
  std::deque<std::pair<EventHandle, void*>> pending_;
  at::HostStats stats_;
};

HostCachingAllocator& instance() {
  static auto* allocator = new HostCachingAllocator();  // outlives tensors
  return *allocator;
}

void HostCachingAllocator::release(void* ptr) {
  try {
    instance().free_block(ptr);
  } catch (const std::exception& e) {  // deleters must not throw
    TORCH_BACKEND_WARN_ONCE("failed to free pinned memory: ", e.what());
  }
}

}  // namespace

at::HostAllocator* host_allocator() { return &instance(); }

bool is_pinned(const void* ptr) {
  return ptr != nullptr && instance().contains(ptr);
}

bool record_host_use(const void* ptr, const c10::Stream& stream) {
  return instance().record_use(ptr, stream);
}

}  // namespace torch_backend
