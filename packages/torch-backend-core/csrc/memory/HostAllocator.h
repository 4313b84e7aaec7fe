// Internal: the caching allocator of pinned (page-locked) host memory that
// makes pin_memory() and non_blocking copies work.
#pragma once

#include <ATen/core/CachingHostAllocator.h>

namespace torch_backend {

at::HostAllocator* host_allocator();
// Whether `ptr` lies inside a live pinned block.
bool is_pinned(const void* ptr);
// Keeps the pinned block holding `ptr` from reuse until work now enqueued on
// `stream` is done. Returns false if `ptr` is not pinned memory of ours.
bool record_host_use(const void* ptr, const c10::Stream& stream);

}  // namespace torch_backend
