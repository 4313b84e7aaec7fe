// Work a stream waits for that may fail after the wait was enqueued: a
// collective on its communication stream, which a peer's stall, death or
// library error ends without its result. The runtime's event then completes
// all the same (an aborted collective lets its stream go on), so the waiting
// stream runs on with stale data, and nothing in the device runtime says so.
//
// The layer that enqueues such a wait (distributed) registers it here; every
// call that makes a stream's results visible to the host (synchronizing a
// stream, an event or the device, a copy to the host, host access to device
// memory) then checks the stream's dependencies once the stream finished, and
// a failed one fails the stream: the call raises the dependency's error, and
// so does every later one on that stream (sticky, as CUDA's errors are). As
// in CUDA, the dependency follows events: a stream that waits for an event
// recorded on a failed or dependent stream inherits that.
//
// Costs nothing measurable while no dependency was ever registered. After
// that, each registration, event record and event wait costs O(1) amortised
// and memory holds only what may still fail: a stream (or an event) refers to
// one node of a shared graph of its history instead of a copy of everything it
// waits for, and a node collapses once it and all it includes finished
// (StreamDependencies.cpp).
#pragma once

#include <c10/core/Stream.h>

#include <exception>
#include <memory>

namespace torch_backend {

class StreamDependency {
 public:
  enum class State { Running, Succeeded, Failed };
  virtual ~StreamDependency() = default;
  // Must report Failed before the stream work that the waiting stream waits
  // for completes: the check runs right after the waiting stream finished.
  virtual State state() = 0;
  // The error to raise once Failed.
  virtual std::exception_ptr error() const = 0;
};

// While one lives, this thread's stream and event queries and
// synchronizations check no dependencies: a dependency's own state() asks
// whether its stream work ended, never whether it succeeded (its end event
// is recorded on a stream that depends on it).
class UncheckedQueries {
 public:
  UncheckedQueries();
  ~UncheckedQueries();
  UncheckedQueries(const UncheckedQueries&) = delete;
  UncheckedQueries& operator=(const UncheckedQueries&) = delete;

 private:
  bool previous_;
};

// `stream`'s later work waits for `dependency` (call before enqueuing the
// wait, so a check never misses it).
void add_stream_dependency(const c10::Stream& stream,
                           std::shared_ptr<StreamDependency> dependency);

// Raise the error of a failed dependency of `stream` (call once the stream
// finished its work); forgets succeeded ones.
void check_stream_dependencies(const c10::Stream& stream);
// The same for every stream of `device` (after the device synchronized).
void check_device_dependencies(c10::DeviceIndex device);

// Events carry their recording stream's dependencies to the streams that
// wait for them.
void note_event_recorded(void* event, const c10::Stream& stream);
void note_event_waited(void* event, const c10::Stream& stream);
// After the event completed.
void check_event_dependencies(void* event);
void forget_event(void* event) noexcept;

}  // namespace torch_backend
