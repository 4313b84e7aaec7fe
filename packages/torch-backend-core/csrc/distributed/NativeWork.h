// The work object of a collective on the device's collective library: done
// when the communication stream passes the collective's end event.
//
// As in ProcessGroupNCCL: wait() makes the caller's current stream wait for
// that event (the host goes on), so later work on the stream sees the
// results; with an explicit timeout, or for a barrier, it also blocks the
// host until the collective is done. The work keeps its tensors alive until
// then, instead of recordStream. Its state (WorkState) is shared with the
// group's watchdog, which fails it on a timeout or a library error: wait()
// then raises, naming the collective. A failure after wait() returned fails
// the streams that wait for the collective instead (StreamDependencies.h):
// the next call that reads their results on the host raises it, so a stale
// output is never read as a result.
#pragma once
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <c10/core/Event.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../runtime/StreamDependencies.h"
#include "Communicator.h"
#include "FlightRecorder.h"

namespace torch_backend::distributed {

// Marks the calling thread as a group's watchdog (Watchdog.cpp): there a
// work's poll() leaves an asynchronous error for the watchdog to publish.
void mark_watchdog_thread();
bool on_watchdog_thread();

// What the watchdog needs of a work, without its tensors: the watchdog's
// thread must never free a tensor (it may run while Python finalises).
class WorkState final : public StreamDependency,
                        public std::enable_shared_from_this<WorkState> {
 public:
  // `end_process_on_error`: a failure the caller sees ends the process, as
  // the watchdog's does (TORCH_BACKEND_DIST_ERROR_HANDLING=abort).
  // `watchdog_publishes`: the group dumps its flight recorder on a failure,
  // so the library's asynchronous error reaches the caller only once the
  // watchdog published it, after every rank's dump (as ProcessGroupNCCL lets
  // no error out before its dump): a caller that ends its process at once
  // on the error must not cut the dumps short.
  WorkState(std::shared_ptr<Communicator> comm, std::string description,
            bool end_process_on_error = false, bool watchdog_publishes = false);

  // Marks the end of the collective on the communication stream: right after
  // it was enqueued, or after the group that enqueues it (coalescing). Later
  // work on that stream depends on it.
  void record_end();
  // True once the collective finished or failed (a library error fails it).
  bool poll();
  // Fails it with `why` unless it already finished. Where an abort ends the
  // collective, fail it first: the abort lets its stream go on.
  void fail(const std::string& why);
  // The library's asynchronous error poll() found and left to the watchdog
  // to publish (`watchdog_publishes`); empty if none.
  std::string unpublished_error() const;
  // The error, if it failed.
  std::exception_ptr error() const override;
  // As a dependency of the streams that wait for it.
  State state() override;
  // Milliseconds since it was enqueued (0 before).
  std::chrono::milliseconds running_for() const;

  const std::shared_ptr<Communicator> comm;
  const std::string description;
  const bool end_process_on_error;
  const bool watchdog_publishes;
  c10::Event end;
  // As the flight recorder reads it, and its entry there.
  const std::shared_ptr<CollectiveProgress> progress =
      std::make_shared<CollectiveProgress>();
  std::optional<std::size_t> trace_id;

 private:
  // A caller's poll() waits here for the watchdog to publish an error.
  void await_publication(const std::string& async);

  mutable std::mutex mutex_;
  std::condition_variable published_;
  std::string unpublished_;
  std::exception_ptr error_;
  bool done_ = false;
  bool recorded_ = false;
  std::chrono::steady_clock::time_point enqueued_;
};

class NativeWork : public c10d::Work {
 public:
  // `outputs` are the work's results; `keep_alive` every tensor the
  // collective reads or writes. `blocking`: wait() also blocks the host until
  // the collective is done (a barrier).
  NativeWork(std::shared_ptr<WorkState> state, c10d::OpType type,
             std::vector<at::Tensor> outputs,
             std::vector<at::Tensor> keep_alive, bool blocking = false);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override;
  bool wait(std::chrono::milliseconds timeout) override;
  void abort() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  const std::shared_ptr<WorkState>& state() const { return state_; }

 private:
  void throw_if_failed();

  std::shared_ptr<WorkState> state_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_alive_;
  const bool blocking_;
  std::mutex future_mutex_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace torch_backend::distributed
