// The watchdog of one native process group: a thread that polls the group's
// unfinished collectives for the library's asynchronous errors and for the
// group's timeout (init_process_group(timeout=...)), as ProcessGroupNCCL's
// does. On either it aborts the group's communicators (which ends their
// blocked stream work) and fails every unfinished collective with a message
// naming the collective, the group and its ranks, and the time it ran; the
// group then refuses new collectives with that message. Or, where
// TORCH_BACKEND_DIST_ERROR_HANDLING=abort asks, it ends the process.
//
// Its thread holds no tensor and calls no Python (the shutdown contract): it
// sees works only through their WorkState. At exit (an atexit handler, before
// core waits for the devices) every watchdog drains: it goes on until its
// group's collectives finished or failed (a hung one fails at the timeout,
// so exit never waits forever), then stops, before Python finalises.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "FailureDumps.h"
#include "NativeWork.h"

namespace torch_backend::distributed {

// Drains every watchdog of the process (see Watchdog::drain).
void drain_all_watchdogs();

class Watchdog {
 public:
  // `dumps`: the flight-recorder dumps when the group fails (none: off).
  Watchdog(std::string group, std::chrono::milliseconds timeout,
           bool end_process_on_error, std::shared_ptr<FailureDumps> dumps);
  ~Watchdog();  // stops and joins its thread
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void watch(std::shared_ptr<WorkState> work);
  void watch(std::weak_ptr<Communicator> comm);
  // Why the group failed; "" while it has not.
  std::string failure() const;
  // Whether a failure dumps the flight recorder first (then the watchdog
  // publishes the library's asynchronous errors, after the dumps).
  bool dumps_first() const { return dumps_ != nullptr; }
  // Returns once every watched collective finished or the group failed, and
  // stops the thread.
  void drain();
  // Fails every watched collective that has not finished (before an abort).
  void fail_unfinished(const std::string& why);

 private:
  void run();
  void fail_group(const std::string& why);
  static void fail_unfinished(
      const std::vector<std::shared_ptr<WorkState>>& works,
      const std::string& why);

  const std::string group_;
  const std::chrono::milliseconds timeout_;
  const bool end_process_on_error_;
  const std::shared_ptr<FailureDumps> dumps_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::condition_variable drained_;
  std::string failure_;
  std::vector<std::shared_ptr<WorkState>> works_;
  std::vector<std::weak_ptr<Communicator>> comms_;
  std::thread thread_;
};

}  // namespace torch_backend::distributed
