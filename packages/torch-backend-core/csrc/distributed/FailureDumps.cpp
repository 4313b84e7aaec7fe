#include "FailureDumps.h"

#include <torch/csrc/distributed/c10d/Utils.hpp>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>

#include "FlightRecorder.h"

namespace torch_backend::distributed {
namespace {

// The store key a failing rank sets; its value names the rank.
const std::string kDumpRequestKey = "flight_recorder_dump_request";
// Set by each rank once its dump is written.
std::string dumped_key(std::uint64_t global_rank) {
  return "flight_recorder_dumped/" + std::to_string(global_rank);
}
// How often a failing rank looks for its peers' dumps.
constexpr std::chrono::milliseconds kPeerCheckInterval(50);
// How long stop() lets a dump under way finish (a dump takes milliseconds
// unless it waits for the GIL).
constexpr std::chrono::seconds kStopWait(2);

}  // namespace

// What the listener's thread uses: shared, so that it outlives a FailureDumps
// that stopped without waiting for it.
struct FailureDumps::Listener {
  Listener(c10::intrusive_ptr<c10d::Store> store, int global_rank,
           std::vector<std::uint64_t> members)
      : store(std::move(store)),
        global_rank(global_rank),
        members(std::move(members)),
        check_interval(
            c10d::getCvarInt({"TORCH_NCCL_COORD_CHECK_MILSEC"}, 1000)) {}

  // Whether another rank asked for dumps; false for good once the store is
  // gone (with the rank that served it: nothing more to hear).
  bool peer_asked() {
    if (!store_usable) {
      return false;
    }
    try {
      return store->check({kDumpRequestKey});
    } catch (const std::exception&) {
      store_usable = false;
      return false;
    }
  }

  // Whether every member said its dump is written (false once the store
  // is gone: nothing more to learn).
  bool members_dumped() {
    std::vector<std::string> keys;
    for (const std::uint64_t member : members) {
      keys.push_back(dumped_key(member));
    }
    try {
      return store->check(keys);
    } catch (const std::exception&) {
      return false;
    }
  }

  const c10::intrusive_ptr<c10d::Store> store;
  const int global_rank;
  const std::vector<std::uint64_t> members;
  const std::chrono::milliseconds check_interval;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  bool asked_here = false;  // this rank's group failed
  bool dumped = false;
  bool exited = false;
  bool store_usable = true;  // the thread's own
};

FailureDumps::FailureDumps(c10::intrusive_ptr<c10d::Store> store,
                           int global_rank, std::vector<std::uint64_t> members)
    : listener_(std::make_shared<Listener>(std::move(store), global_rank,
                                           std::move(members))),
      thread_([listener = listener_] { listen(listener); }) {}

FailureDumps::~FailureDumps() { stop(); }

void FailureDumps::stop() {
  if (!thread_.joinable()) {
    return;
  }
  std::unique_lock<std::mutex> lock(listener_->mutex);
  listener_->stopping = true;
  listener_->wake.notify_all();
  const bool exited = listener_->wake.wait_for(
      lock, kStopWait, [this] { return listener_->exited; });
  lock.unlock();
  if (exited) {
    thread_.join();
  } else {
    thread_.detach();
  }
}

void FailureDumps::dump_and_tell_peers(std::chrono::milliseconds wait) {
  Listener& listener = *listener_;
  {
    std::lock_guard<std::mutex> lock(listener.mutex);
    if (listener.asked_here || listener.dumped || listener.stopping) {
      return;
    }
    listener.asked_here = true;
  }
  listener.wake.notify_all();
  try {
    listener.store->set(kDumpRequestKey, std::to_string(listener.global_rank));
  } catch (const std::exception& e) {
    // The store may be gone with the rank that served it: dump anyway.
    std::fprintf(stderr,
                 "torch_backend: rank %d could not ask its peers for "
                 "flight-recorder dumps: %s\n",
                 listener.global_rank, e.what());
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  {
    std::unique_lock<std::mutex> lock(listener.mutex);
    listener.wake.wait_until(
        lock, deadline, [&] { return listener.dumped || listener.stopping; });
    if (listener.stopping) {
      return;
    }
  }
  // Then the peers' (their listeners check the store every
  // TORCH_NCCL_COORD_CHECK_MILSEC).
  while (!listener.members_dumped() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kPeerCheckInterval);
  }
}

void FailureDumps::listen(const std::shared_ptr<Listener>& listener) {
  std::unique_lock<std::mutex> lock(listener->mutex);
  while (!listener->stopping && !listener->dumped) {
    listener->wake.wait_for(lock, listener->check_interval, [&] {
      return listener->stopping || listener->asked_here;
    });
    if (listener->stopping) {
      break;
    }
    bool dump = listener->asked_here;
    if (!dump) {
      lock.unlock();
      dump = listener->peer_asked();
      lock.lock();
    }
    if (dump && !listener->stopping) {
      lock.unlock();
      write_flight_recorder(listener->global_rank);
      try {
        listener->store->set(
            dumped_key(static_cast<std::uint64_t>(listener->global_rank)), "1");
      } catch (const std::exception&) {
        // The store is gone with the rank that served it: nobody to tell.
      }
      lock.lock();
      listener->dumped = true;
      listener->wake.notify_all();
    }
  }
  listener->exited = true;
  listener->wake.notify_all();
}

}  // namespace torch_backend::distributed
