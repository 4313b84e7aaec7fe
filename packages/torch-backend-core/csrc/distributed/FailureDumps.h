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
// failure the watchdog is about to report. So nothing waits for a dump
// without a bound: the watchdog goes on after a while, and stop() leaves a
// listener still dumping to finish on its own.
#pragma once
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace torch_backend::distributed {

class FailureDumps {
 public:
  // `store`: the group's (every member reads the request there);
  // `global_rank` names the dump (<prefix><global_rank>); `members`: the
  // group's global ranks, each of which says there when it dumped.
  FailureDumps(c10::intrusive_ptr<c10d::Store> store, int global_rank,
               std::vector<std::uint64_t> members);
  ~FailureDumps();  // stop()
  FailureDumps(const FailureDumps&) = delete;
  FailureDumps& operator=(const FailureDumps&) = delete;

  // The group failed here: dumps (once) and asks the other ranks to dump.
  // Returns when every member's dump is written (each tells through the
  // store), or after `wait` at most: so a rank that ends its process on the
  // error (or whose exit makes torchrun end the others) leaves no rank
  // without its dump.
  void dump_and_tell_peers(std::chrono::milliseconds wait);
  // Stops listening. A dump under way gets a moment to finish; after that
  // the listener is left to finish it alone (it owns what it uses).
  void stop();

 private:
  struct Listener;
  static void listen(const std::shared_ptr<Listener>& listener);

  std::shared_ptr<Listener> listener_;
  std::thread thread_;
};

}  // namespace torch_backend::distributed
