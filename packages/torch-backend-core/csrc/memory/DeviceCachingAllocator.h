// Internal: the caching allocator of one device.
#pragma once

#include <array>
#include <deque>
#include <map>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>

#include <torch_backend/Allocator.h>
#include <torch_backend/DeviceRuntime.h>

#include "Block.h"
#include "ExpandableSegment.h"

namespace torch_backend::allocator {

using c10::CachingDeviceAllocator::DeviceStats;

class DeviceCachingAllocator {
 public:
  explicit DeviceCachingAllocator(c10::DeviceIndex device);

  // Throws c10::OutOfMemoryError after freeing the cache and retrying.
  Block* malloc(size_t size, c10::Stream stream);
  void free(Block* block);
  void record_stream(Block* block, c10::Stream stream);
  // Returns every fully free segment to the runtime, and those of private
  // pools no graph holds any more.
  void empty_cache();

  // Graphs (CUDA's private memory pools): from begin to end, allocations on
  // streams the runtime reports capturing come from `pool`'s own blocks
  // (created on first use; each begin adds a user), so a graph's replays
  // find their memory at the addresses they were captured with and nothing
  // else takes it. Frees of blocks other streams used wait until the capture
  // ends. release_pool drops a user; a pool without users gives its free
  // segments back at the next empty_cache.
  void begin_allocate_to_pool(c10::MempoolId_t pool);
  void end_allocate_to_pool();
  void release_pool(c10::MempoolId_t pool);
  void set_memory_fraction(double fraction);
  // The base and size of the segment (runtime allocation) `block` is part of.
  std::pair<void*, size_t> segment_of(const Block* block);
  // Every segment with its blocks (torch.<device>.memory._snapshot).
  std::vector<MemorySegmentInfo> segments();

  DeviceStats stats();
  void reset_peak_stats();
  void reset_accumulated_stats();

 private:
  template <typename Fn>
  void for_each_stat(Fn&& fn);  // every Stat of stats_
  size_t allowed_bytes();
  Block* make_block(c10::Stream stream, size_t size, BlockPool* pool,
                    void* ptr);
  void recycle(Block* block);
  Block* take_free_block(BlockPool& pool, c10::Stream stream, size_t size);
  Block* new_segment(BlockPool& pool, c10::Stream stream, size_t size);
  // new_segment with expandable segments: maps pages at the end of the
  // stream's segment for the pool, merged with its free last block.
  Block* grow_expandable(BlockPool& pool, c10::Stream stream, size_t size);
  // The block that ends where `segment`'s mapped pages end, if any.
  Block* last_block(const ExpandableSegment& segment);
  // Gives the whole pages of a free expandable block back to the runtime;
  // what is left of it at either end stays free.
  void unmap_free_pages(Block* block);
  bool should_split(const Block* block, size_t size) const;
  void split(Block* block, size_t size);
  void free_block(Block* block);
  // A block becomes reusable: ends its allocation's history.
  void completed_free(Block* block);
  Block* take_binned(c10::Stream stream, size_t size);
  bool bin(Block* block);
  void flush_bins();
  // Moves a block in or out of the bins, with its statistics.
  void mark_binned(Block* block, bool binned);
  // Statistics of a block becoming active (+1) or inactive (-1), and of a
  // split block entering (+1) or leaving (-1) the free ones.
  void count_active(const Block* block, int sign);
  void count_inactive_split(const Block* block, int sign);
  void merge_into(Block* dst, Block* src);
  void pool_insert(Block* block);
  void pool_erase(Block* block);
  void record_events(Block* block);
  struct PrivatePool;
  // The private pool allocations on `stream` go to now, or null.
  PrivatePool* capture_pool_for(c10::Stream stream);
  void release_unused_private_pools();
  void trace(MemoryTraceEntry::Action action, const Block* block);
  void report_to_profiler(const Block* block, int64_t sign) const;
  void process_events(bool wait);
  void release_cached_blocks();
  // Gives `pool`'s wholly free segments back to the runtime, and the whole
  // pages of its free expandable blocks (the device is synchronised).
  void release_free_segments(BlockPool& pool);
  void release_segment(Block* block);
  void garbage_collect();
  [[noreturn]] void raise_out_of_memory(size_t size, size_t segment,
                                        bool fraction_limited);

  const c10::DeviceIndex device_;
  const size_t max_split_size_;  // PYTORCH_ALLOC_CONF, read once
  // The runtime's page size when expandable segments are on, else 0.
  size_t expandable_page_ = 0;
  std::vector<std::unique_ptr<ExpandableSegment>> expandable_segments_;
  std::mutex mutex_;
  // Tree nodes of the free-block sets come from a pool, not from malloc: the
  // hot path inserts and erases one per allocation.
  std::pmr::unsynchronized_pool_resource node_memory_;
  BlockPool small_pool_{true, &node_memory_};
  BlockPool large_pool_{false, &node_memory_};
  std::vector<Block*> spare_blocks_;  // recycled Block objects
  // Fast path for the commonest pattern, a small tensor freed and allocated
  // again at once: freed small blocks wait here, unmerged, for a request of
  // their exact size on their stream. Any miss flushes them into the pools.
  static constexpr size_t kBinnedMax = 64 << 10;
  static constexpr size_t kBinDepth = 64;
  std::array<std::vector<Block*>, kBinnedMax / kMinBlockSize + 1> bins_;
  size_t binned_ = 0;
  // The runtime's status of the last malloc that ran out of memory (kSuccess
  // when the last new segment failed for the memory fraction instead): its
  // text ends the OutOfMemoryError message.
  Status last_oom_status_ = kSuccess;
  DeviceStats stats_;
  double memory_fraction_ = 1.0;
  size_t total_memory_ = 0;
  std::deque<std::pair<EventHandle, Block*>> pending_events_;
  // The first block of every segment, by base address (merges move it).
  std::map<uintptr_t, Block*> segment_heads_;
  std::vector<EventHandle> spare_events_;
  struct PrivatePool {
    explicit PrivatePool(std::pmr::memory_resource* nodes)
        : small(true, nodes, true), large(false, nodes, true) {}
    BlockPool small;
    BlockPool large;
    int users = 0;
  };
  // Never destroyed while a block may point at one of their BlockPools:
  // erased only once no segment of theirs is left.
  std::map<c10::MempoolId_t, std::unique_ptr<PrivatePool>> private_pools_;
  PrivatePool* capturing_into_ = nullptr;
  // Freed during a capture with uses on other streams: their events are
  // recorded once it ends (recording one could join the capture).
  std::vector<Block*> frees_after_capture_;
};

}  // namespace torch_backend::allocator
