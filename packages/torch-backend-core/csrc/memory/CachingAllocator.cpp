// The c10::DeviceAllocator PyTorch sees: routes to one caching allocator per
// device. torch.accelerator.memory_* and torch.<device>.memory_* read it.
#include <torch_backend/Allocator.h>

#include <iterator>
#include <memory>
#include <mutex>
#include <vector>

#include <c10/core/DeviceGuard.h>

#include <torch_backend/Runtime.h>

#include "../runtime/Streams.h"
#include "../runtime/Warn.h"
#include "DeviceCachingAllocator.h"
#include "GraphPools.h"
#include "History.h"

namespace torch_backend {
namespace {

using allocator::Block;
using allocator::DeviceCachingAllocator;

using Allocators = std::vector<std::unique_ptr<DeviceCachingAllocator>>;

Allocators& all_devices() {
  // Leaked: memory may be freed during interpreter shutdown.
  static auto* all = [] {
    auto* created = new Allocators();
    for (int d = 0; d < device_count(); ++d) {
      created->push_back(std::make_unique<DeviceCachingAllocator>(
          static_cast<c10::DeviceIndex>(d)));
    }
    return created;
  }();
  return *all;
}

DeviceCachingAllocator& for_device(c10::DeviceIndex device) {
  Allocators& all = all_devices();
  TORCH_CHECK(device >= 0 && static_cast<size_t>(device) < all.size(),
              "invalid device index ", device, " for '",
              c10::get_privateuse1_backend(), "': ", all.size(),
              " device(s) available");
  return *all[device];
}

void delete_block(void* ctx) noexcept {
  // Deleters run in destructors: report, never throw (e.g. after a fork).
  try {
    auto* block = static_cast<Block*>(ctx);
    for_device(block->device).free(block);
  } catch (const std::exception& e) {
    TORCH_BACKEND_WARN_ONCE("failed to free device memory: ", e.what());
  }
}

class CachingAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
    const c10::DeviceIndex device = current_device_index();
    const c10::Device where(c10::DeviceType::PrivateUse1, device);
    if (bytes == 0) {
      return {nullptr, nullptr, &delete_block, where};
    }
    Block* block = for_device(device).malloc(bytes, current_stream(device));
    return {block->ptr, block, &delete_block, where};
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  void copy_data(void* dest, const void* src, size_t count) const override {
    TORCH_BACKEND_CHECK(
        active_runtime().memcpy(dest, src, count, CopyKind::DeviceToDevice));
  }

  bool initialized() override { return has_active_runtime(); }

  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    for (int d = 0; d < device_count(); ++d) {
      for_device(static_cast<c10::DeviceIndex>(d)).empty_cache();
    }
  }

  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override {
    record_stream(ptr, stream);
  }

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(
      c10::DeviceIndex device) override {
    return for_device(device).stats();
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    for_device(device).reset_accumulated_stats();
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    for_device(device).reset_peak_stats();
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_device_index(device);
    c10::DeviceGuard guard({c10::DeviceType::PrivateUse1, device});
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    TORCH_BACKEND_CHECK(
        active_runtime().mem_get_info(&free_bytes, &total_bytes));
    return {free_bytes, total_bytes};
  }
};

}  // namespace

c10::DeviceAllocator* device_allocator() {
  static auto* instance = new CachingAllocator();
  return instance;
}

bool is_device_allocation(const c10::DataPtr& data_ptr) {
  return data_ptr.get_deleter() == &delete_block;
}

void record_stream(const c10::DataPtr& data_ptr, const c10::Stream& stream) {
  if (data_ptr.get_deleter() != &delete_block || data_ptr.get() == nullptr) {
    return;
  }
  auto* block = static_cast<Block*>(data_ptr.get_context());
  for_device(block->device).record_stream(block, stream);
}

DeviceSegment device_segment_of(const c10::DataPtr& data_ptr) {
  TORCH_CHECK(
      data_ptr.get_deleter() == &delete_block && data_ptr.get() != nullptr,
      "memory not allocated by the device's caching allocator");
  auto* block = static_cast<Block*>(data_ptr.get_context());
  const auto [base, size] = for_device(block->device).segment_of(block);
  return {base, size};
}

void begin_allocate_to_pool(c10::DeviceIndex device, c10::MempoolId_t pool) {
  for_device(device).begin_allocate_to_pool(pool);
}

void end_allocate_to_pool(c10::DeviceIndex device) {
  for_device(device).end_allocate_to_pool();
}

void release_pool(c10::DeviceIndex device, c10::MempoolId_t pool) {
  for_device(device).release_pool(pool);
}

void set_memory_fraction(double fraction, c10::DeviceIndex device) {
  for_device(device).set_memory_fraction(fraction);
}

std::vector<MemorySegmentInfo> memory_segments() {
  std::vector<MemorySegmentInfo> out;
  for (const auto& device : all_devices()) {
    std::vector<MemorySegmentInfo> segments = device->segments();
    std::move(segments.begin(), segments.end(), std::back_inserter(out));
  }
  return out;
}

std::vector<std::vector<MemoryTraceEntry>> memory_traces() {
  std::vector<std::vector<MemoryTraceEntry>> out;
  for (size_t d = 0; d < all_devices().size(); ++d) {
    out.push_back(allocator::trace_of(static_cast<int>(d)));
  }
  return out;
}

}  // namespace torch_backend
