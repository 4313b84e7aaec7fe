#include "ExpandableSegment.h"

#include <torch_backend/Runtime.h>

namespace torch_backend::allocator {

ExpandableSegment::ExpandableSegment(c10::Stream stream, bool small,
                                     std::size_t page, std::size_t capacity)
    : stream(stream), small(small), page_(page), capacity_(capacity) {
  void* base = nullptr;
  check_status(active_runtime().vm_reserve(&base, capacity_), "vm_reserve");
  base_ = static_cast<char*>(base);
}

ExpandableSegment::~ExpandableSegment() {
  DeviceRuntime& runtime = active_runtime();
  for (std::size_t index = 0; index < pages_.size(); ++index) {
    if (pages_[index] != nullptr) {
      (void)runtime.vm_unmap(base_ + index * page_, page_);
      (void)runtime.vm_destroy(pages_[index]);
    }
  }
  (void)runtime.vm_release(base_, capacity_);
}

Status ExpandableSegment::grow(std::size_t bytes) {
  DeviceRuntime& runtime = active_runtime();
  const std::size_t first = pages_.size();
  Status status = kSuccess;
  for (std::size_t done = 0; done < bytes; done += page_) {
    PhysicalHandle handle = nullptr;
    status = runtime.vm_create(&handle, page_);
    if (status != kSuccess) {
      break;
    }
    status = runtime.vm_map(base_ + end(), page_, handle);
    if (status != kSuccess) {
      (void)runtime.vm_destroy(handle);
      break;
    }
    pages_.push_back(handle);
  }
  if (status != kSuccess) {  // all or nothing
    for (std::size_t index = pages_.size(); index-- > first;) {
      (void)runtime.vm_unmap(base_ + index * page_, page_);
      (void)runtime.vm_destroy(pages_[index]);
    }
    pages_.resize(first);
    return status;
  }
  mapped_ += bytes;
  return kSuccess;
}

std::size_t ExpandableSegment::unmap(std::size_t offset, std::size_t bytes) {
  DeviceRuntime& runtime = active_runtime();
  std::size_t unmapped = 0;
  for (std::size_t index = offset / page_;
       index < (offset + bytes) / page_ && index < pages_.size(); ++index) {
    if (pages_[index] == nullptr) {
      continue;
    }
    check_status(runtime.vm_unmap(base_ + index * page_, page_), "vm_unmap");
    check_status(runtime.vm_destroy(pages_[index]), "vm_destroy");
    pages_[index] = nullptr;
    unmapped += page_;
  }
  mapped_ -= unmapped;
  while (!pages_.empty() && pages_.back() == nullptr) {
    pages_.pop_back();  // the end moves back: the range grows from there again
  }
  return unmapped;
}

}  // namespace torch_backend::allocator
