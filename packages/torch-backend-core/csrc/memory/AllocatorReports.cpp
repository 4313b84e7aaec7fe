// What the caching allocator reports: its segments and blocks (the memory
// snapshot's source), its statistics and their resets, and the out-of-memory
// error with the device's and the allocator's totals.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <torch_backend/Runtime.h>

#include "AllocatorStats.h"
#include "DeviceCachingAllocator.h"

namespace torch_backend::allocator {
namespace {

using c10::CachingAllocator::StatArray;
using Lock = std::lock_guard<std::mutex>;

std::string format_size(size_t bytes) {
  std::ostringstream out;
  out.precision(2);
  out << std::fixed;
  if (bytes < (1 << 10)) {
    out.precision(0);
    out << bytes << " bytes";
  } else if (bytes < (1 << 20)) {
    out << bytes / 1024.0 << " KiB";
  } else if (bytes < (size_t{1} << 30)) {
    out << bytes / 1048576.0 << " MiB";
  } else {
    out << bytes / 1073741824.0 << " GiB";
  }
  return out.str();
}

}  // namespace

std::vector<MemorySegmentInfo> DeviceCachingAllocator::segments() {
  Lock lock(mutex_);
  std::vector<MemorySegmentInfo> out;
  for (const auto& [base, head] : segment_heads_) {
    MemorySegmentInfo segment;
    segment.device = device_;
    segment.address = base;
    segment.stream = head->stream.id();
    segment.is_large = !head->pool->is_small;
    segment.is_expandable = head->expandable != nullptr;
    for (const Block* block = head; block != nullptr; block = block->next) {
      MemoryBlockInfo info;
      info.address = reinterpret_cast<uintptr_t>(block->ptr);
      info.size = block->size;
      segment.total_size += block->size;
      if (block->allocated) {
        info.state = MemoryBlockInfo::State::ActiveAllocated;
        info.requested_size = block->requested_size;
        info.context = block->context;
      } else if (block->event_count > 0) {
        info.state = MemoryBlockInfo::State::ActiveAwaitingFree;
        info.requested_size = block->requested_size;
        info.context = block->context;
      }
      segment.blocks.push_back(std::move(info));
    }
    out.push_back(std::move(segment));
  }
  return out;
}

DeviceStats DeviceCachingAllocator::stats() {
  Lock lock(mutex_);
  return stats_;
}

template <typename Fn>
void DeviceCachingAllocator::for_each_stat(Fn&& fn) {
  for (StatArray* array :
       {&stats_.allocation, &stats_.segment, &stats_.active,
        &stats_.inactive_split, &stats_.allocated_bytes, &stats_.reserved_bytes,
        &stats_.active_bytes, &stats_.inactive_split_bytes,
        &stats_.requested_bytes}) {
    for (auto& stat : *array) {
      fn(stat);
    }
  }
  fn(stats_.oversize_allocations);
  fn(stats_.oversize_segments);
}

void DeviceCachingAllocator::reset_peak_stats() {
  Lock lock(mutex_);
  for_each_stat([](c10::CachingAllocator::Stat& stat) { stat.reset_peak(); });
}

void DeviceCachingAllocator::reset_accumulated_stats() {
  Lock lock(mutex_);
  for_each_stat(
      [](c10::CachingAllocator::Stat& stat) { stat.reset_accumulated(); });
  stats_.num_alloc_retries = 0;
  stats_.num_ooms = 0;
  stats_.num_device_alloc = 0;
  stats_.num_device_free = 0;
}

void DeviceCachingAllocator::raise_out_of_memory(size_t size, size_t segment,
                                                 bool fraction_limited) {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  {
    c10::DeviceGuard guard(device_of(device_));
    (void)active_runtime().mem_get_info(&free_bytes, &total_bytes);
  }
  const auto allocated = static_cast<size_t>(stats_.allocated_bytes[0].current);
  const auto reserved = static_cast<size_t>(stats_.reserved_bytes[0].current);
  std::string limit;
  if (fraction_limited) {
    limit = " The memory fraction " + std::to_string(memory_fraction_) +
            " allows " + format_size(allowed_bytes()) + " and " +
            format_size(reserved + segment) + " would be reserved.";
  }
  // The runtime's own words, as for every other runtime error (its recent
  // error message, where it keeps one: ACL's aclGetRecentErrMsg).
  const std::string runtime_text =
      last_oom_status_ == kSuccess
          ? std::string()
          : " The runtime reported: " +
                active_runtime().error_text(last_oom_status_) + ".";
  TORCH_CHECK_WITH(
      OutOfMemoryError, false, device_of(device_),
      " out of memory. Tried to allocate ", format_size(size),
      ". Device has a total capacity of ", format_size(total_bytes),
      " of which ", format_size(free_bytes),
      " is free. Of the allocated "
      "memory ",
      format_size(allocated), " is allocated by PyTorch, and ",
      format_size(reserved - std::min(reserved, allocated)),
      " is reserved by PyTorch but unallocated.", limit, runtime_text);
}

}  // namespace torch_backend::allocator
