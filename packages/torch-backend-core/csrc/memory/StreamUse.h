// Internal: marking the end of a memory block's use on another stream, for
// both caching allocators (device and pinned host memory).
#pragma once

#include <vector>

#include <c10/core/Stream.h>

#include <torch_backend/DeviceRuntime.h>

namespace torch_backend {

// Returns an event recorded on `stream` now: the block is reusable once it
// completes. `spares` (optional) lends an event and takes it back if recording
// fails. If no event can be created or recorded, waits for `stream` instead
// (with a warning naming the failed call) and returns nullptr: the block is
// reusable at once. Throws c10::Error if waiting fails too (a lost device):
// the stream may then still use the memory, so the caller must not reuse it.
EventHandle record_stream_use(DeviceRuntime& runtime, const c10::Stream& stream,
                              std::vector<EventHandle>* spares);

}  // namespace torch_backend
