// Internal: blocks of cached device memory and the pools that hold free ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <set>
#include <unordered_set>

#include <c10/core/Stream.h>

namespace torch_backend::allocator {

struct BlockPool;
class ExpandableSegment;

// A range of one segment (one runtime malloc, or the mapped pages of an
// expandable segment). Neighbours in the same segment are linked so that
// freed blocks merge back.
struct Block {
  Block(c10::DeviceIndex device, c10::Stream stream, size_t size,
        BlockPool* pool, void* ptr)
      : device(device), stream(stream), size(size), pool(pool), ptr(ptr) {}

  bool is_split() const { return prev != nullptr || next != nullptr; }

  c10::DeviceIndex device;
  c10::Stream stream;  // the allocation stream: reuse is ordered on it
  size_t size;
  size_t requested_size = 0;
  BlockPool* pool;
  void* ptr;
  bool allocated = false;
  bool binned = false;  // free, in the allocator's exact-size fast-path bins
  Block* prev = nullptr;
  Block* next = nullptr;
  int event_count = 0;  // pending record_stream events
  int gc_age = 0;       // garbage-collection rounds spent cached
  std::unordered_set<c10::Stream> stream_uses;
  std::shared_ptr<void> context;  // of its allocation, while history records
  // The expandable segment it lies in; null: an ordinary segment (one
  // runtime malloc). prev and next never cross an unmapped hole.
  ExpandableSegment* expandable = nullptr;
};

// Free blocks ordered by (stream, size, address): the best fit on a stream is
// a lower_bound away.
struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream.id() != b->stream.id()) {
      return a->stream.id() < b->stream.id();
    }
    if (a->size != b->size) {
      return a->size < b->size;
    }
    return reinterpret_cast<uintptr_t>(a->ptr) <
           reinterpret_cast<uintptr_t>(b->ptr);
  }
};

struct BlockPool {
  BlockPool(bool small, std::pmr::memory_resource* nodes,
            bool is_private = false)
      : blocks(nodes), is_small(small), is_private(is_private) {}
  std::pmr::set<Block*, BlockOrder> blocks;
  const bool is_small;
  // A graph's private pool (its blocks serve only allocations made while
  // capturing into it): never binned, merged or reused outside it.
  const bool is_private;
};

// Size policy, as in PyTorch's CUDA caching allocator.
constexpr size_t kMinBlockSize = 512;        // every size is a multiple
constexpr size_t kSmallSize = 1 << 20;       // up to here: the small pool
constexpr size_t kSmallBuffer = 2 << 20;     // segment size for small blocks
constexpr size_t kLargeBuffer = 20 << 20;    // segment for 1-10 MiB blocks
constexpr size_t kMinLargeAlloc = 10 << 20;  // from here: rounded segments
constexpr size_t kRoundLarge = 2 << 20;

// Rounds a request (honours PYTORCH_ALLOC_CONF roundup_power2_divisions).
size_t round_size(size_t size);
// Size of the segment to malloc for a rounded request.
size_t segment_size(size_t rounded);

}  // namespace torch_backend::allocator
