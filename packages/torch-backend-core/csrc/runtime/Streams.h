// Internal: c10::Stream <-> runtime streams. Stream id 0 is each device's
// default stream; ids 1.. index a lazily created pool per device and
// priority, like CUDA's stream pools. The current stream is per thread.
#pragma once

#include <c10/core/Stream.h>

#include <torch_backend/DeviceRuntime.h>

namespace torch_backend {

// Device indices core keeps per-device state for (streams, captures, seeds).
constexpr int kMaxDevices = 64;

c10::Stream default_stream(c10::DeviceIndex device);
c10::Stream current_stream(c10::DeviceIndex device);
void set_current_stream(const c10::Stream& stream);
// Round-robin from the pool of the priority class `priority` falls into.
c10::Stream stream_from_pool(c10::DeviceIndex device, int priority);
StreamHandle native_stream(const c10::Stream& stream);
// Waits for `stream`'s enqueued work (its device current), then raises the
// error of work it waited for that failed (StreamDependencies.h): what every
// call that hands a stream's results to the host does.
void synchronize_stream(const c10::Stream& stream);
// Current device of the calling thread, from the runtime.
c10::DeviceIndex current_device_index();
// The current device for a negative index, else `device`, which must name a
// device (a clear error otherwise): how per-device calls read their argument.
c10::DeviceIndex checked_device_index(c10::DeviceIndex device);

}  // namespace torch_backend
