// Internal: the stream captures in progress (graphs). Core refuses, by name,
// the calls a capture cannot record (a host synchronisation, the CPU
// fallback) before they reach the runtime, and the capture that saw one
// fails at its end, as CUDA invalidates a capture.
#pragma once

#include <string>

#include <c10/core/Stream.h>

#include <torch_backend/DeviceRuntime.h>

namespace torch_backend {

// Starts capturing `stream` (runtime capture_begin). One capture per device
// at a time; throws NotImplementedError where the runtime cannot capture.
void begin_capture(const c10::Stream& stream, CaptureMode mode);
// Ends the capture `stream` began and returns its graph. If a refused call
// invalidated it, the runtime's capture is still ended and its graph
// destroyed, then the refusal's reason is raised again.
GraphHandle end_capture(const c10::Stream& stream);
// Whether any capture is in progress in this process (one atomic load).
bool any_capture_in_progress();
// Whether work enqueued on `stream` now would be captured (its own capture,
// or one it joined by waiting for an event recorded while capturing).
bool is_capturing(const c10::Stream& stream);
// The advice for host synchronisation, which no graph can hold.
inline constexpr const char* kHostSyncAdvice =
    "a host synchronisation: synchronize(), .item(), .cpu(), .tolist() and "
    "printing a tensor must stay outside the captured region";

// Throws RuntimeError naming `what` if `stream` is capturing, after marking
// its capture failed: `what` says what was asked ("aten::nonzero runs on the
// CPU fallback"), `advice` what to do instead.
void refuse_while_capturing(const c10::Stream& stream, const std::string& what,
                            const std::string& advice);
// The same for anything that waits for every stream of `device`.
void refuse_while_device_captures(c10::DeviceIndex device,
                                  const std::string& what,
                                  const std::string& advice);

}  // namespace torch_backend
