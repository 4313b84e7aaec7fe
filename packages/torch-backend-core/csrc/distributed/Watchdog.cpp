#include "Watchdog.h"

#include "EndProcess.h"
#include "FlightRecorder.h"

#include <torch/csrc/distributed/c10d/Utils.hpp>

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <unordered_set>

namespace torch_backend::distributed {

namespace {

// How often unfinished collectives are polled: the error margin of the
// timeout, and the delay before an asynchronous error fails the group.
constexpr std::chrono::milliseconds kPollInterval(100);

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::mutex& registry_mutex() {
  static auto* mutex = new std::mutex();  // never destroyed: used at exit
  return *mutex;
}

std::vector<Watchdog*>& registry() {
  static auto* watchdogs = new std::vector<Watchdog*>();
  return *watchdogs;
}

}  // namespace

void drain_all_watchdogs() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (Watchdog* watchdog : registry()) {
    watchdog->drain();
  }
}

Watchdog::Watchdog(std::string group, std::chrono::milliseconds timeout,
                   bool end_process_on_error,
                   std::shared_ptr<FailureDumps> dumps)
    : group_(std::move(group)),
      timeout_(timeout),
      end_process_on_error_(end_process_on_error),
      dumps_(std::move(dumps)),
      thread_([this] { run(); }) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().push_back(this);
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto& all = registry();
    all.erase(std::remove(all.begin(), all.end(), this), all.end());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void Watchdog::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  drained_.wait(lock, [this] {
    return stopping_ || works_.empty() || !failure_.empty();
  });
  stopping_ = true;
  lock.unlock();
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  if (dumps_) {
    dumps_->stop();  // before Python finalises: a dump may need the GIL
  }
}

void Watchdog::watch(std::shared_ptr<WorkState> work) {
  std::lock_guard<std::mutex> lock(mutex_);
  works_.push_back(std::move(work));
}

void Watchdog::watch(std::weak_ptr<Communicator> comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  comms_.push_back(std::move(comm));
}

std::string Watchdog::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void Watchdog::run() {
  mark_watchdog_thread();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kPollInterval, [this] { return stopping_; });
    if (stopping_ || !failure_.empty()) {
      continue;
    }
    std::vector<std::shared_ptr<WorkState>> works = works_;
    lock.unlock();
    std::string why;
    std::vector<std::shared_ptr<WorkState>> finished;
    for (const auto& work : works) {
      if (work->poll()) {
        if (std::exception_ptr error = work->error(); error && why.empty()) {
          why = message_of(error);
        } else if (why.empty()) {
          // The library's error, left here to publish after the dumps.
          why = work->unpublished_error();
        }
        finished.push_back(work);
        retire_op(work->trace_id);
      } else if (timeout_.count() > 0 && work->running_for() > timeout_ &&
                 why.empty()) {
        why = work->description + " timed out: it ran for " +
              std::to_string(work->running_for().count()) +
              " ms, past the group's timeout of " +
              std::to_string(timeout_.count()) +
              " ms (a peer stalled or died, or ranks issued different "
              "collectives)";
      }
    }
    if (!why.empty()) {
      fail_group(why);
    }
    lock.lock();
    // (A set: thousands of collectives may be in flight and finish at once.)
    const std::unordered_set<const WorkState*> done = [&] {
      std::unordered_set<const WorkState*> pointers;
      for (const auto& work : finished) {
        pointers.insert(work.get());
      }
      return pointers;
    }();
    works_.erase(std::remove_if(works_.begin(), works_.end(),
                                [&](const auto& work) {
                                  return done.count(work.get()) > 0;
                                }),
                 works_.end());
    drained_.notify_all();
  }
  drained_.notify_all();
}

void Watchdog::fail_group(const std::string& why) {
  // What every rank last did, before anything the failure sets off.
  if (dumps_) {
    dumps_->dump_and_tell_peers(std::chrono::milliseconds(dump_wait_ms()));
  }
  // Ending the process comes before the failure is published: once it is,
  // a caller's next collective raises it, and that thread's exit could win
  // the race with this one's (the process then ends with the caller's code).
  if (end_process_on_error_) {
    end_process("process group '" + group_ + "' failed: " + why);
  }
  std::vector<std::shared_ptr<WorkState>> works;
  std::vector<std::weak_ptr<Communicator>> comms;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = why;
    works = works_;
    comms = comms_;
  }
  drained_.notify_all();
  // Every unfinished collective fails with the reason, then aborting ends the
  // communicators' blocked stream work, so nothing waits for it forever. In
  // that order: a stream the abort lets go on must find its collective failed.
  fail_unfinished(works, why);
  for (const auto& weak : comms) {
    if (auto comm = weak.lock()) {
      comm->abort();
    }
  }
}

void Watchdog::fail_unfinished(const std::string& why) {
  std::vector<std::shared_ptr<WorkState>> works;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    works = works_;
  }
  fail_unfinished(works, why);
}

void Watchdog::fail_unfinished(
    const std::vector<std::shared_ptr<WorkState>>& works,
    const std::string& why) {
  for (const auto& work : works) {
    work->poll();  // one that finished keeps its result
    work->fail(why);
  }
}

}  // namespace torch_backend::distributed
