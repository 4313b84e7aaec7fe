// Internal to the ACL emulator's runtime: streams, events and captured
// models (aclmdlRI), shared by Runtime.cpp and Capture.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "Emulator.h"

namespace acl_emulator {

using Clock = std::chrono::steady_clock;

// aclGetRecentErrMsg's text for the calling thread, as it was recorded.
void set_recent_error(const std::string& text);

// A model run instance made by capturing streams (aclmdlRICaptureBegin ..
// aclmdlRICaptureEnd): their tasks in the order the host enqueued them,
// which respects every wait the host issued; aclmdlRIExecuteAsync runs them
// in that order as one task of a stream. Streams that waited for an event
// recorded in the capture joined it, as in CANN.
struct Stream;

struct Model {
  explicit Model(Stream* origin_stream) : origin(origin_stream) {}
  void add(std::function<aclError()> task) {
    const std::lock_guard<std::mutex> lock(mutex);
    tasks.push_back(std::move(task));
  }

  Stream* const origin;
  std::mutex mutex;
  std::vector<std::function<aclError()>> tasks;
  std::vector<Stream*> streams;  // capturing: the origin and joiners
  bool ended = false;
  std::string invalidated;  // the call that invalidated the capture
};

// ---- streams ----------------------------------------------------------------

struct Stream {
  int device = 0;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::function<aclError()>> queue;
  std::uint64_t enqueued = 0;    // tasks ever enqueued
  std::uint64_t finished = 0;    // tasks ever finished, in order
  aclError error = ACL_SUCCESS;  // first failure not yet reported
  std::string error_text;
  std::shared_ptr<Model> capture;  // under mutex: the model it records into

  explicit Stream(int device_index) : device(device_index) {
    // Never joined: the process may end with the stream alive (as CANN's).
    std::thread([this] { run(); }).detach();
  }

  // The task's number in the stream's order; 0 while the stream is being
  // captured (the task then goes into the model, to run at its launches).
  std::uint64_t push(std::function<aclError()> task) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (capture != nullptr) {
      capture->add(std::move(task));
      return 0;
    }
    queue.push_back(std::move(task));
    changed.notify_all();
    return ++enqueued;
  }

  void run() {
    for (;;) {
      std::function<aclError()> task;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [this] { return !queue.empty(); });
        task = std::move(queue.front());
        queue.pop_front();
      }
      std::string text;
      aclError status = ACL_SUCCESS;
      {
        // A task's errors land in this thread's message; keep it.
        status = task();
        if (status != ACL_SUCCESS) {
          const char* message = aclGetRecentErrMsg();
          text = message != nullptr ? message : "kernel failed";
        }
      }
      const std::lock_guard<std::mutex> lock(mutex);
      if (status != ACL_SUCCESS && error == ACL_SUCCESS) {
        error = status;
        error_text = text;
      }
      ++finished;
      changed.notify_all();
    }
  }

  void wait_for(std::uint64_t task) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return finished >= task; });
  }

  // Reports (once) the first failure of the stream's work.
  aclError take_error() {
    const std::lock_guard<std::mutex> lock(mutex);
    const aclError status = error;
    if (status != ACL_SUCCESS) {
      error = ACL_SUCCESS;
      set_recent_error(error_text);  // the failed task's message, as it was
    }
    return status;
  }

  aclError synchronize() {
    std::uint64_t last = 0;
    {
      const std::lock_guard<std::mutex> lock(mutex);
      last = enqueued;
    }
    wait_for(last);
    return take_error();
  }
};

// ---- events -----------------------------------------------------------------

// One recording of an event: done once its stream reaches it.
struct Marker {
  Stream* stream = nullptr;
  std::uint64_t task = 0;  // 0: recorded in a capture (done at its launches)
  std::weak_ptr<Model> captured_in;
  std::atomic<bool> done{false};
  Clock::time_point when;
};

struct Event {
  bool timing = false;
  std::mutex mutex;
  std::shared_ptr<Marker> last;  // nullptr: never recorded

  std::shared_ptr<Marker> marker() {
    const std::lock_guard<std::mutex> lock(mutex);
    return last;
  }
};

// The stream a handle names (nullptr: `device`'s default stream).
Stream* stream_of(aclrtStream stream, int device);
// The calling thread's device, after the checks every device call makes.
aclError device_of_thread(const char* call, int* device);
// Whether `marker` was recorded in a capture that has not ended.
bool open_capture(const Marker& marker);
// `stream` waited for `marker`: if it was recorded in a capture that has not
// ended, the stream joins that capture (true).
bool join_capture(Stream* stream, const Marker& marker);
// Fails `call` (and invalidates the capture) if `stream` is being captured:
// waiting for a capturing stream on the host is not allowed, as in CANN.
aclError refuse_if_capturing(Stream* stream, const char* call);

}  // namespace acl_emulator
