// Internal: one expandable segment (PYTORCH_ALLOC_CONF=expandable_segments:
// True): a reserved range of device addresses whose pages are mapped as the
// caching allocator grows it and unmapped when their memory is free, through
// the runtime's virtual-memory calls (DeviceRuntime::vm_*). The allocator
// keeps one growing segment per stream and pool, so tensors of changing
// sizes reuse the physical memory that freed ones gave back instead of
// leaving gaps that no new segment fits.
#pragma once

#include <cstddef>
#include <vector>

#include <c10/core/Stream.h>

#include <torch_backend/DeviceRuntime.h>

namespace torch_backend::allocator {

class ExpandableSegment {
 public:
  // Reserves `capacity` bytes (a multiple of `page`) on the current device.
  ExpandableSegment(c10::Stream stream, bool small, std::size_t page,
                    std::size_t capacity);
  // Unmaps what is mapped and releases the range (errors ignored: the
  // device may be gone at exit).
  ~ExpandableSegment();
  ExpandableSegment(const ExpandableSegment&) = delete;
  ExpandableSegment& operator=(const ExpandableSegment&) = delete;

  char* base() const { return base_; }
  std::size_t page() const { return page_; }
  std::size_t capacity() const { return capacity_; }
  // Offset just past the last mapped page: where the segment grows.
  std::size_t end() const { return pages_.size() * page_; }
  std::size_t mapped() const { return mapped_; }

  // Maps `bytes` (a multiple of the page) at end(): kSuccess, or the
  // runtime's status with nothing mapped.
  Status grow(std::size_t bytes);
  // Unmaps the pages in [offset, offset + bytes) (page-aligned), which the
  // device no longer uses; returns the bytes unmapped. Throws on a runtime
  // error, with nothing unmapped.
  std::size_t unmap(std::size_t offset, std::size_t bytes);

  const c10::Stream stream;
  const bool small;  // which pool its blocks belong to
  // The segment its stream and pool grow: a full one hands over to a new one.
  bool growing = true;

 private:
  char* base_ = nullptr;
  const std::size_t page_;
  const std::size_t capacity_;
  std::size_t mapped_ = 0;
  // One per page up to end(); null: unmapped (a hole left by freed memory).
  std::vector<PhysicalHandle> pages_;
};

}  // namespace torch_backend::allocator
