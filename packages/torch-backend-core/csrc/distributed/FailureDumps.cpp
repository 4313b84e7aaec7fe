#include "FailureDumps.h"

#include <torch/csrc/distributed/c10d/Utils.hpp>

#include "FlightRecorder.h"

namespace torch_backend::distributed {
namespace {

// The store key a failing rank sets; its value names the rank.
const std::string kDumpRequestKey = "flight_recorder_dump_request";

}  // namespace

FailureDumps::FailureDumps(c10::intrusive_ptr<c10d::Store> store,
                           int global_rank)
    : store_(std::move(store)),
      global_rank_(global_rank),
      check_interval_(
          c10d::getCvarInt({"TORCH_NCCL_COORD_CHECK_MILSEC"}, 1000)),
      thread_([this] { listen(); }) {}

FailureDumps::~FailureDumps() { stop(); }

void FailureDumps::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) {
    thread_.join();
  }
}

void FailureDumps::dump_and_tell_peers(std::chrono::milliseconds wait) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (asked_here_ || dumped_) {
      return;
    }
    asked_here_ = true;
  }
  wake_.notify_all();
  try {
    store_->set(kDumpRequestKey, std::to_string(global_rank_));
  } catch (const std::exception& e) {
    // The store may be gone with the rank that served it: dump anyway.
    std::fprintf(stderr,
                 "torch_backend: rank %d could not ask its peers for "
                 "flight-recorder dumps: %s\n",
                 global_rank_, e.what());
  }
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait_for(lock, wait, [this] { return dumped_ || stopping_; });
}

bool FailureDumps::peer_asked() {
  if (!store_usable_) {
    return false;
  }
  try {
    return store_->check({kDumpRequestKey});
  } catch (const std::exception&) {
    store_usable_ = false;  // gone with the rank that served it
    return false;
  }
}

void FailureDumps::listen() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_ && !dumped_) {
    wake_.wait_for(lock, check_interval_,
                   [this] { return stopping_ || asked_here_; });
    if (stopping_) {
      break;
    }
    bool dump = asked_here_;
    if (!dump) {
      lock.unlock();
      dump = peer_asked();
      lock.lock();
    }
    if (dump && !stopping_) {
      lock.unlock();
      write_flight_recorder(global_rank_);
      lock.lock();
      dumped_ = true;
      wake_.notify_all();
    }
  }
}

}  // namespace torch_backend::distributed
