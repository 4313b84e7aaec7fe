// The caching allocator's blocks over expandable segments
// (PYTORCH_ALLOC_CONF=expandable_segments:True): a request that no cached
// block serves grows the stream's segment by what it needs, merging with a
// free block at its end, and empty_cache unmaps the whole pages of free
// blocks. The reserved ranges themselves are ExpandableSegment's.
#include <algorithm>
#include <iterator>
#include <memory>

#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <torch_backend/Runtime.h>

#include "AllocatorStats.h"
#include "DeviceCachingAllocator.h"
#include "History.h"

namespace torch_backend::allocator {

Block* DeviceCachingAllocator::last_block(const ExpandableSegment& segment) {
  const auto end = reinterpret_cast<uintptr_t>(segment.base() + segment.end());
  auto head = segment_heads_.lower_bound(end);
  if (segment.end() == 0 || head == segment_heads_.begin()) {
    return nullptr;
  }
  Block* block = std::prev(head)->second;
  if (block->expandable != &segment) {
    return nullptr;
  }
  while (block->next != nullptr) {
    block = block->next;
  }
  const bool ends_there =
      reinterpret_cast<uintptr_t>(block->ptr) + block->size == end;
  return ends_there ? block : nullptr;
}

Block* DeviceCachingAllocator::grow_expandable(BlockPool& pool,
                                               c10::Stream stream,
                                               size_t size) {
  last_oom_status_ = kSuccess;
  const size_t page = expandable_page_;
  auto round_up = [page](size_t bytes) {
    return (bytes + page - 1) / page * page;
  };
  ExpandableSegment* segment = nullptr;
  for (const auto& candidate : expandable_segments_) {
    if (candidate->growing && candidate->stream == stream &&
        candidate->small == pool.is_small) {
      segment = candidate.get();
    }
  }
  Block* tail = segment != nullptr ? last_block(*segment) : nullptr;
  // A free last block (bins were flushed before growing) takes part.
  const bool tail_free = tail != nullptr && !tail->allocated &&
                         tail->event_count == 0 && tail->stream_uses.empty() &&
                         pool.blocks.count(tail) == 1 && tail->size < size;
  size_t grow = round_up(size - (tail_free ? tail->size : 0));
  if (segment == nullptr || segment->end() + grow > segment->capacity()) {
    if (segment != nullptr) {
      segment->growing = false;  // full: a fresh range takes over
    }
    allowed_bytes();  // learns the device's total memory
    // Room for the whole device twice over: holes left by unmapped pages
    // are not mapped again, so the range is used up only slowly.
    const size_t capacity =
        std::max(round_up(2 * total_memory_), round_up(size));
    c10::DeviceGuard guard(device_of(device_));
    expandable_segments_.push_back(std::make_unique<ExpandableSegment>(
        stream, pool.is_small, page, capacity));
    segment = expandable_segments_.back().get();
    tail = nullptr;
    grow = round_up(size);
  }
  if (stats_.reserved_bytes[0].current + grow > allowed_bytes()) {
    return nullptr;
  }
  const size_t offset = segment->end();
  const bool was_empty = segment->mapped() == 0;
  Status status = kSuccess;
  {
    c10::DeviceGuard guard(device_of(device_));
    status = segment->grow(grow);
  }
  if (status != kSuccess && active_runtime().is_out_of_memory(status)) {
    last_oom_status_ = status;
    return nullptr;
  }
  check_status(status, "vm_map");
  stats_.num_device_alloc += 1;
  update(stats_.reserved_bytes, pool, static_cast<int64_t>(grow));
  if (was_empty) {
    update(stats_.segment, pool, 1);
  }
  char* const address = segment->base() + offset;
  if (recording_history()) {
    record_trace(device_, {MemoryTraceEntry::Action::SegmentMap,
                           reinterpret_cast<uintptr_t>(address), grow,
                           stream.id(), 0, nullptr});
  }
  if (tail != nullptr && tail_free) {
    pool_erase(tail);
    tail->size += grow;
    return tail;
  }
  Block* block = make_block(stream, grow, &pool, address);
  block->expandable = segment;
  if (tail != nullptr) {
    tail->next = block;
    block->prev = tail;
  } else {
    segment_heads_[reinterpret_cast<uintptr_t>(address)] = block;
  }
  return block;
}

void DeviceCachingAllocator::unmap_free_pages(Block* block) {
  ExpandableSegment& segment = *block->expandable;
  const size_t page = segment.page();
  const size_t start = static_cast<char*>(block->ptr) - segment.base();
  const size_t end = start + block->size;
  const size_t first = (start + page - 1) / page * page;
  const size_t last = end / page * page;
  if (last <= first) {
    return;
  }
  const size_t unmapped = segment.unmap(first, last - first);  // may throw
  pool_erase(block);
  Block* const prev = block->prev;
  Block* const next = block->next;
  Block* before = nullptr;
  if (first > start) {
    before = block;  // keeps its head entry, if it is one
    before->size = first - start;
    before->next = nullptr;
  } else {
    if (prev != nullptr) {
      prev->next = nullptr;
    } else {
      segment_heads_.erase(reinterpret_cast<uintptr_t>(block->ptr));
    }
  }
  Block* after = nullptr;
  if (end > last) {
    after = make_block(block->stream, end - last, block->pool,
                       segment.base() + last);
    after->expandable = &segment;
    after->next = next;
    if (next != nullptr) {
      next->prev = after;
    }
    segment_heads_[reinterpret_cast<uintptr_t>(after->ptr)] = after;
  } else if (next != nullptr) {
    next->prev = nullptr;
    segment_heads_[reinterpret_cast<uintptr_t>(next->ptr)] = next;
  }
  update(stats_.reserved_bytes, *block->pool, -static_cast<int64_t>(unmapped));
  stats_.num_device_free += 1;
  if (segment.mapped() == 0) {
    update(stats_.segment, *block->pool, -1);
  }
  if (recording_history()) {
    record_trace(device_, {MemoryTraceEntry::Action::SegmentUnmap,
                           reinterpret_cast<uintptr_t>(segment.base() + first),
                           unmapped, block->stream.id(), 0, nullptr});
  }
  if (before != nullptr) {
    pool_insert(before);
  } else {
    recycle(block);
  }
  if (after != nullptr) {
    pool_insert(after);
  }
}

}  // namespace torch_backend::allocator
