// Flight-recorder dumps on every rank of a group that failed, as
// ProcessGroupNCCL's (TORCH_FR_DUMP_ON_TIMEOUT). The rank whose watchdog saw
// the timeout or the library's error dumps, then asks the group's other ranks
// through the group's store; each rank's listener checks the store every
// TORCH_NCCL_COORD_CHECK_MILSEC (1000 by default) and dumps its own. So a rank
// stuck in host code, all of its collectives finished, still tells what it
// last did, and the analyser can name it as the rank that never arrived.
//
// Dumps run on the listener's thread: a dump symbolises Python stacks, which
// needs the GIL, and the thread that holds it may be waiting for the very
// failure the watchdog is about to report. The watchdog waits for its dump a
// bounded time, then goes on.
#pragma once
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace torch_backend::distributed {

class FailureDumps {
 public:
  // `store`: the group's (every member reads the request there);
  // `global_rank` names the dump (<prefix><global_rank>).
  FailureDumps(c10::intrusive_ptr<c10d::Store> store, int global_rank);
  ~FailureDumps();  // stop()
  FailureDumps(const FailureDumps&) = delete;
  FailureDumps& operator=(const FailureDumps&) = delete;

  // The group failed here: dumps (once) and asks the other ranks to dump.
  // Returns when the dump is written, or after `wait` at most.
  void dump_and_tell_peers(std::chrono::milliseconds wait);
  // Stops listening (and joins the thread); a dump under way finishes first.
  void stop();

 private:
  void listen();
  bool peer_asked();

  const c10::intrusive_ptr<c10d::Store> store_;
  const int global_rank_;
  const std::chrono::milliseconds check_interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool asked_here_ = false;  // this rank's group failed
  bool dumped_ = false;
  bool store_usable_ = true;  // the listener's own
  std::thread thread_;
};

}  // namespace torch_backend::distributed
