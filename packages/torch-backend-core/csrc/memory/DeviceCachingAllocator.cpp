#include "DeviceCachingAllocator.h"

#include "AllocatorStats.h"
#include "History.h"

#include <algorithm>
#include <iterator>

#include <c10/core/Allocator.h>
#include <c10/core/AllocatorConfig.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/DeviceType.h>
#include <c10/util/Exception.h>

#include <torch_backend/Runtime.h>

#include "../runtime/Capture.h"
#include "../runtime/Streams.h"
#include "StreamUse.h"

namespace torch_backend::allocator {
namespace {

using c10::CachingAllocator::AcceleratorAllocatorConfig;
using Lock = std::lock_guard<std::mutex>;

}  // namespace

DeviceCachingAllocator::DeviceCachingAllocator(c10::DeviceIndex device)
    : device_(device),
      max_split_size_(AcceleratorAllocatorConfig::max_split_size()) {
  stats_.max_split_size = static_cast<int64_t>(max_split_size_);
  if (AcceleratorAllocatorConfig::use_expandable_segments()) {
    c10::DeviceGuard guard(device_of(device_));
    size_t page = 0;
    const Status status = active_runtime().vm_granularity(&page);
    if (status == kNotSupported) {
      // As PyTorch where CUDA's driver lacks virtual memory management.
      TORCH_WARN_ONCE(
          "PYTORCH_ALLOC_CONF=expandable_segments:True: the ",
          c10::get_privateuse1_backend(),
          " runtime has no virtual memory calls (DeviceRuntime::vm_*); "
          "using ordinary segments");
    } else {
      check_status(status, "vm_granularity");
      TORCH_CHECK(page > 0 && page % kMinBlockSize == 0,
                  "vm_granularity reported a page of ", page, " bytes");
      expandable_page_ = page;
    }
  }
}

Block* DeviceCachingAllocator::make_block(c10::Stream stream, size_t size,
                                          BlockPool* pool, void* ptr) {
  if (spare_blocks_.empty()) {
    return new Block(device_, stream, size, pool, ptr);
  }
  Block* block = spare_blocks_.back();
  spare_blocks_.pop_back();
  *block = Block(device_, stream, size, pool, ptr);
  return block;
}

void DeviceCachingAllocator::recycle(Block* block) {
  spare_blocks_.push_back(block);
}

size_t DeviceCachingAllocator::allowed_bytes() {
  if (total_memory_ == 0) {
    size_t free_bytes = 0;
    c10::DeviceGuard guard(device_of(device_));
    TORCH_BACKEND_CHECK(
        active_runtime().mem_get_info(&free_bytes, &total_memory_));
  }
  return static_cast<size_t>(memory_fraction_ *
                             static_cast<double>(total_memory_));
}

Block* DeviceCachingAllocator::malloc(size_t requested, c10::Stream stream) {
  AllocationContext context =
      recording_history() ? gather_allocation_context() : nullptr;
  Lock lock(mutex_);
  process_events(/*wait=*/false);
  const size_t size = round_size(requested);
  PrivatePool* graph_pool = capture_pool_for(stream);
  BlockPool& pool =
      graph_pool != nullptr
          ? (size <= kSmallSize ? graph_pool->small : graph_pool->large)
          : (size <= kSmallSize ? small_pool_ : large_pool_);
  Block* block = graph_pool != nullptr ? nullptr : take_binned(stream, size);
  if (block == nullptr) {
    block = take_free_block(pool, stream, size);
  }
  if (block == nullptr && binned_ > 0 && graph_pool == nullptr) {
    flush_bins();  // merged, the binned blocks may fit
    block = take_free_block(pool, stream, size);
  }
  if (block == nullptr) {
    // An expandable segment grows by what the request needs.
    const size_t segment =
        expandable_page_ > 0 && !pool.is_private ? size : segment_size(size);
    // Both wait for the whole device, which a capture in progress forbids.
    const bool may_synchronize = capturing_into_ == nullptr;
    if (may_synchronize) {
      garbage_collect();
    }
    block = new_segment(pool, stream, segment);
    if (block == nullptr && may_synchronize) {
      // Give every cached block back to the runtime and try once more.
      release_cached_blocks();
      stats_.num_alloc_retries += 1;
      block = new_segment(pool, stream, segment);
    }
    if (block == nullptr) {
      stats_.num_ooms += 1;
      const bool fraction_limited =
          memory_fraction_ < 1.0 &&
          stats_.reserved_bytes[0].current + segment > allowed_bytes();
      if (recording_history()) {
        record_trace(device_, {MemoryTraceEntry::Action::Oom, 0, requested,
                               stream.id(), 0, context});
      }
      raise_out_of_memory(requested, segment, fraction_limited);
    }
  }
  if (should_split(block, size)) {
    split(block, size);
  }
  block->allocated = true;
  block->requested_size = requested;
  update(stats_.allocation, pool, 1);
  update(stats_.allocated_bytes, pool, block->size);
  count_active(block, +1);
  update(stats_.requested_bytes, pool, requested);
  if (block->size >= max_split_size_) {
    stats_.oversize_allocations.increase(1);
  }
  report_to_profiler(block, +1);
  if (recording_history()) {
    block->context = std::move(context);
    trace(MemoryTraceEntry::Action::Alloc, block);
  }
  return block;
}

// PyTorch's profiler (profile_memory=True, the memory timeline) sees every
// allocation and free with the device's totals, as CUDA's allocator reports
// them; a thread-local check when no profiler records memory.
void DeviceCachingAllocator::report_to_profiler(const Block* block,
                                                int64_t sign) const {
  if (!c10::memoryProfilingEnabled()) {
    return;
  }
  c10::reportMemoryUsageToProfiler(
      block->ptr, sign * static_cast<int64_t>(block->size),
      static_cast<size_t>(stats_.allocated_bytes[0].current),
      static_cast<size_t>(stats_.reserved_bytes[0].current),
      c10::Device(c10::DeviceType::PrivateUse1, device_));
}

void DeviceCachingAllocator::trace(MemoryTraceEntry::Action action,
                                   const Block* block) {
  record_trace(device_, {action, reinterpret_cast<uintptr_t>(block->ptr),
                         block->size, block->stream.id(), 0, block->context});
}

Block* DeviceCachingAllocator::take_free_block(BlockPool& pool,
                                               c10::Stream stream,
                                               size_t size) {
  Block key(device_, stream, size, &pool, nullptr);
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != stream) {
    return nullptr;
  }
  const size_t max_split = max_split_size_;
  // Oversize blocks serve only large requests of nearly their size, so that
  // they are not fragmented by small ones.
  if ((size < max_split && (*it)->size >= max_split) ||
      (size >= max_split && (*it)->size >= size + kLargeBuffer)) {
    return nullptr;
  }
  Block* block = *it;
  pool_erase(block);
  return block;
}

Block* DeviceCachingAllocator::new_segment(BlockPool& pool, c10::Stream stream,
                                           size_t size) {
  // A graph's pool takes ordinary segments: an expandable one would mix its
  // blocks with the device's shared ones.
  if (expandable_page_ > 0 && !pool.is_private) {
    return grow_expandable(pool, stream, size);
  }
  last_oom_status_ = kSuccess;
  if (stats_.reserved_bytes[0].current + size > allowed_bytes()) {
    return nullptr;
  }
  DeviceRuntime& runtime = active_runtime();
  c10::DeviceGuard guard(device_of(device_));
  void* ptr = nullptr;
  const Status status = runtime.malloc(&ptr, size);
  if (status != kSuccess && runtime.is_out_of_memory(status)) {
    last_oom_status_ = status;
    return nullptr;
  }
  check_status(status, "malloc");
  stats_.num_device_alloc += 1;
  update(stats_.segment, pool, 1);
  update(stats_.reserved_bytes, pool, size);
  if (size >= max_split_size_) {
    stats_.oversize_segments.increase(1);
  }
  Block* block = make_block(stream, size, &pool, ptr);
  segment_heads_[reinterpret_cast<uintptr_t>(ptr)] = block;
  if (recording_history()) {
    trace(MemoryTraceEntry::Action::SegmentAlloc, block);
  }
  return block;
}

bool DeviceCachingAllocator::should_split(const Block* block,
                                          size_t size) const {
  const size_t remaining = block->size - size;
  // An expandable segment's remainder stays mapped at its end, where the
  // next growth merges with it: split it off whatever its size (as CUDA).
  if (block->pool->is_small || block->expandable != nullptr) {
    return remaining >= kMinBlockSize;
  }
  return size < max_split_size_ && remaining > kSmallSize;
}

void DeviceCachingAllocator::split(Block* block, size_t size) {
  Block* rest = make_block(block->stream, block->size - size, block->pool,
                           static_cast<char*>(block->ptr) + size);
  rest->expandable = block->expandable;
  rest->prev = block;
  rest->next = block->next;
  if (rest->next != nullptr) {
    rest->next->prev = rest;
  }
  block->next = rest;
  block->size = size;
  pool_insert(rest);
}

void DeviceCachingAllocator::free(Block* block) {
  Lock lock(mutex_);
  if (recording_history()) {
    trace(MemoryTraceEntry::Action::FreeRequested, block);
  }
  block->allocated = false;
  const BlockPool& pool = *block->pool;
  update(stats_.allocation, pool, -1);
  update(stats_.allocated_bytes, pool, -static_cast<int64_t>(block->size));
  update(stats_.requested_bytes, pool,
         -static_cast<int64_t>(block->requested_size));
  if (block->size >= max_split_size_) {
    stats_.oversize_allocations.decrease(1);
  }
  report_to_profiler(block, -1);
  if (!block->stream_uses.empty()) {
    if (capturing_into_ != nullptr) {
      frees_after_capture_.push_back(block);
      return;
    }
    record_events(block);  // reusable once the other streams are done
    return;
  }
  completed_free(block);
  if (!bin(block)) {
    free_block(block);
  }
}

void DeviceCachingAllocator::completed_free(Block* block) {
  if (recording_history()) {
    trace(MemoryTraceEntry::Action::FreeCompleted, block);
  }
  block->context.reset();
}

Block* DeviceCachingAllocator::take_binned(c10::Stream stream, size_t size) {
  if (size > kBinnedMax) {
    return nullptr;
  }
  std::vector<Block*>& slot = bins_[size / kMinBlockSize];
  if (slot.empty() || slot.back()->stream != stream) {
    return nullptr;
  }
  Block* block = slot.back();
  slot.pop_back();
  mark_binned(block, false);
  return block;  // malloc counts it active, as a block from a pool
}

bool DeviceCachingAllocator::bin(Block* block) {
  if (block->size > kBinnedMax || !block->pool->is_small ||
      block->pool->is_private) {
    return false;
  }
  std::vector<Block*>& slot = bins_[block->size / kMinBlockSize];
  if (slot.size() >= kBinDepth) {
    return false;
  }
  slot.push_back(block);
  count_active(block, -1);
  mark_binned(block, true);
  return true;
}

void DeviceCachingAllocator::flush_bins() {
  for (std::vector<Block*>& slot : bins_) {
    for (Block* block : slot) {
      // Back to "active but unpooled": free_block accounts it into the pool.
      mark_binned(block, false);
      count_active(block, +1);
      free_block(block);
    }
    slot.clear();
  }
}

void DeviceCachingAllocator::mark_binned(Block* block, bool binned) {
  // A binned block is free as far as statistics go, exactly as in a pool.
  block->binned = binned;
  binned_ = binned ? binned_ + 1 : binned_ - 1;
  count_inactive_split(block, binned ? +1 : -1);
}

void DeviceCachingAllocator::count_active(const Block* block, int sign) {
  update(stats_.active, *block->pool, sign);
  update(stats_.active_bytes, *block->pool,
         sign * static_cast<int64_t>(block->size));
}

void DeviceCachingAllocator::count_inactive_split(const Block* block,
                                                  int sign) {
  if (block->is_split()) {
    update(stats_.inactive_split, *block->pool, sign);
    update(stats_.inactive_split_bytes, *block->pool,
           sign * static_cast<int64_t>(block->size));
  }
}

void DeviceCachingAllocator::record_stream(Block* block, c10::Stream stream) {
  Lock lock(mutex_);
  if (stream != block->stream) {
    block->stream_uses.insert(stream);
  }
}

void DeviceCachingAllocator::free_block(Block* block) {
  count_active(block, -1);
  merge_into(block, block->prev);
  merge_into(block, block->next);
  pool_insert(block);
}

void DeviceCachingAllocator::merge_into(Block* dst, Block* src) {
  if (src == nullptr || src->allocated || src->binned || src->event_count > 0 ||
      !src->stream_uses.empty()) {
    return;
  }
  pool_erase(src);
  if (dst->prev == src) {
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev != nullptr) {
      dst->prev->next = dst;
    } else {
      segment_heads_[reinterpret_cast<uintptr_t>(dst->ptr)] = dst;
    }
  } else {
    dst->next = src->next;
    if (dst->next != nullptr) {
      dst->next->prev = dst;
    }
  }
  dst->size += src->size;
  recycle(src);
}

void DeviceCachingAllocator::pool_insert(Block* block) {
  block->gc_age = 0;
  block->pool->blocks.insert(block);
  count_inactive_split(block, +1);
}

void DeviceCachingAllocator::pool_erase(Block* block) {
  block->pool->blocks.erase(block);
  count_inactive_split(block, -1);
}

void DeviceCachingAllocator::record_events(Block* block) {
  DeviceRuntime& runtime = active_runtime();
  try {
    for (const c10::Stream& stream : block->stream_uses) {
      if (EventHandle event =
              record_stream_use(runtime, stream, &spare_events_)) {
        block->event_count += 1;
        pending_events_.emplace_back(event, block);
      }
    }
  } catch (...) {
    // No event and no wait (a lost device): another stream may still use
    // this memory, so it is withdrawn for good: never reused nor merged.
    block->stream_uses.clear();
    block->event_count += 1;
    throw;
  }
  block->stream_uses.clear();
  if (block->event_count == 0 && !bin(block)) {
    free_block(block);  // every stream was waited for
  }
}

void DeviceCachingAllocator::process_events(bool wait) {
  DeviceRuntime& runtime = active_runtime();
  for (auto it = pending_events_.begin(); it != pending_events_.end();) {
    auto [event, block] = *it;
    if (wait) {
      TORCH_BACKEND_CHECK(runtime.event_synchronize(event));
    } else {
      bool complete = false;
      TORCH_BACKEND_CHECK(runtime.event_query(event, &complete));
      if (!complete) {
        ++it;
        continue;
      }
    }
    spare_events_.push_back(event);
    it = pending_events_.erase(it);
    if (--block->event_count == 0) {
      completed_free(block);
      free_block(block);
    }
  }
}

void DeviceCachingAllocator::release_segment(Block* block) {
  // Freed first: if the runtime fails, the segment stays cached and counted.
  TORCH_BACKEND_CHECK(active_runtime().free(block->ptr));
  if (recording_history()) {
    trace(MemoryTraceEntry::Action::SegmentFree, block);
  }
  segment_heads_.erase(reinterpret_cast<uintptr_t>(block->ptr));
  pool_erase(block);
  update(stats_.segment, *block->pool, -1);
  update(stats_.reserved_bytes, *block->pool,
         -static_cast<int64_t>(block->size));
  if (block->size >= max_split_size_) {
    stats_.oversize_segments.decrease(1);
  }
  stats_.num_device_free += 1;
  recycle(block);
}

void DeviceCachingAllocator::release_free_segments(BlockPool& pool) {
  std::vector<Block*> whole;
  std::vector<Block*> expandable;
  for (Block* block : pool.blocks) {
    if (block->expandable != nullptr) {
      expandable.push_back(block);
    } else if (!block->is_split()) {
      whole.push_back(block);
    }
  }
  for (Block* block : whole) {
    release_segment(block);
  }
  for (Block* block : expandable) {
    unmap_free_pages(block);
  }
}

void DeviceCachingAllocator::release_cached_blocks() {
  process_events(/*wait=*/true);
  flush_bins();
  c10::DeviceGuard guard(device_of(device_));
  // Like cudaFree: no enqueued work may still use memory handed back.
  TORCH_BACKEND_CHECK(active_runtime().synchronize_device());
  release_free_segments(small_pool_);
  release_free_segments(large_pool_);
  release_unused_private_pools();
  // Ranges no longer grown and with nothing mapped go back too.
  expandable_segments_.erase(
      std::remove_if(expandable_segments_.begin(), expandable_segments_.end(),
                     [](const auto& segment) {
                       return !segment->growing && segment->mapped() == 0;
                     }),
      expandable_segments_.end());
}

void DeviceCachingAllocator::garbage_collect() {
  const double threshold =
      AcceleratorAllocatorConfig::garbage_collection_threshold();
  if (threshold <= 0.0) {
    return;
  }
  const auto limit =
      static_cast<int64_t>(threshold * static_cast<double>(allowed_bytes()));
  if (stats_.reserved_bytes[0].current <= limit) {
    return;
  }
  // Release whole free segments, those cached longest first.
  flush_bins();
  std::vector<Block*> candidates;
  for (Block* block : large_pool_.blocks) {
    block->gc_age += 1;
    if (!block->is_split() || block->expandable != nullptr) {
      candidates.push_back(block);
    }
  }
  std::sort(candidates.begin(), candidates.end(),
            [](Block* a, Block* b) { return a->gc_age > b->gc_age; });
  c10::DeviceGuard guard(device_of(device_));
  TORCH_BACKEND_CHECK(active_runtime().synchronize_device());
  for (Block* block : candidates) {
    if (stats_.reserved_bytes[0].current <= limit) {
      break;
    }
    if (block->expandable != nullptr) {
      unmap_free_pages(block);
    } else {
      release_segment(block);
    }
  }
}

void DeviceCachingAllocator::empty_cache() {
  Lock lock(mutex_);
  TORCH_CHECK(capturing_into_ == nullptr, "empty_cache() while a graph is ",
              "being captured on ", device_of(device_),
              " (freeing device memory waits for the device): call it before "
              "the capture begins or after it ends");
  release_cached_blocks();
}

DeviceCachingAllocator::PrivatePool* DeviceCachingAllocator::capture_pool_for(
    c10::Stream stream) {
  if (capturing_into_ == nullptr || !is_capturing(stream)) {
    return nullptr;
  }
  return capturing_into_;
}

void DeviceCachingAllocator::begin_allocate_to_pool(c10::MempoolId_t id) {
  Lock lock(mutex_);
  TORCH_CHECK(capturing_into_ == nullptr, "a graph is already capturing into ",
              "a memory pool of ", device_of(device_));
  std::unique_ptr<PrivatePool>& pool = private_pools_[id];
  if (!pool) {
    pool = std::make_unique<PrivatePool>(&node_memory_);
  }
  pool->users += 1;
  capturing_into_ = pool.get();
}

void DeviceCachingAllocator::end_allocate_to_pool() {
  Lock lock(mutex_);
  capturing_into_ = nullptr;
  std::vector<Block*> deferred;
  deferred.swap(frees_after_capture_);
  for (Block* block : deferred) {
    record_events(block);
  }
}

void DeviceCachingAllocator::release_pool(c10::MempoolId_t id) {
  Lock lock(mutex_);
  auto it = private_pools_.find(id);
  if (it != private_pools_.end() && it->second->users > 0) {
    it->second->users -= 1;
  }
}

void DeviceCachingAllocator::release_unused_private_pools() {
  for (auto it = private_pools_.begin(); it != private_pools_.end();) {
    PrivatePool& pool = *it->second;
    if (pool.users > 0 || &pool == capturing_into_) {
      ++it;
      continue;
    }
    release_free_segments(pool.small);
    release_free_segments(pool.large);
    // Kept while a tensor from it is alive: its blocks point at the pool.
    const bool has_segments = std::any_of(
        segment_heads_.begin(), segment_heads_.end(), [&](const auto& entry) {
          const BlockPool* owner = entry.second->pool;
          return owner == &pool.small || owner == &pool.large;
        });
    it = has_segments ? std::next(it) : private_pools_.erase(it);
  }
}

void DeviceCachingAllocator::set_memory_fraction(double fraction) {
  TORCH_CHECK_VALUE(fraction >= 0.0 && fraction <= 1.0,
                    "invalid fraction: ", fraction,
                    ". Please set within [0, 1].");
  Lock lock(mutex_);
  memory_fraction_ = fraction;
}

std::pair<void*, size_t> DeviceCachingAllocator::segment_of(
    const Block* block) {
  // Inter-process handles name runtime allocations; pages mapped into a
  // reserved range are none (CUDA needs fabric handles for it).
  TORCH_CHECK_NOT_IMPLEMENTED(
      block->expandable == nullptr, "'", c10::get_privateuse1_backend(),
      "' cannot share memory of an expandable segment with other processes "
      "(PYTORCH_ALLOC_CONF=expandable_segments:True); send CPU tensors, or "
      "allocate without the setting");
  Lock lock(mutex_);  // neighbours split and merge under the lock
  const Block* first = block;
  while (first->prev != nullptr) {
    first = first->prev;
  }
  size_t size = 0;
  for (const Block* part = first; part != nullptr; part = part->next) {
    size += part->size;
  }
  return {first->ptr, size};
}

}  // namespace torch_backend::allocator
