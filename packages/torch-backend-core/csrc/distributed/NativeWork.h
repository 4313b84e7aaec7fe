// The work object of a collective on the device's collective library: done
// when the communication stream passes the collective's end event.
//
// As in ProcessGroupNCCL: wait() makes the caller's current stream wait for
// that event (the host goes on), so later work on the stream sees the
// results; with an explicit timeout it also blocks the host until the
// collective is done or the time is up. The work keeps its tensors alive
// until then, instead of recordStream. A communicator error or abort (core's
// watchdog) fails it: wait() then raises, naming the collective.
#pragma once
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <c10/core/Event.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "Communicator.h"

namespace torch_backend::distributed {

class NativeWork : public c10d::Work {
 public:
  // `outputs` are the work's results; `keep_alive` every tensor the
  // collective reads or writes. `blocking`: wait() also blocks the host until
  // the collective is done (a barrier).
  NativeWork(std::shared_ptr<Communicator> comm, c10d::OpType type,
             std::string description, std::vector<at::Tensor> outputs,
             std::vector<at::Tensor> keep_alive, bool blocking = false);
  // Marks the end of the collective on the communication stream: right after
  // it was enqueued, or after the group that enqueues it (coalescing).
  void record_end();

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override;
  bool wait(std::chrono::milliseconds timeout) override;
  void abort() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  // Fails the work with `why` unless it already completed (the watchdog).
  void fail(const std::string& why);
  const std::string& description() const { return description_; }

 private:
  // Throws the work's error, if it has one (checking the communicator).
  void throw_if_failed();

  std::shared_ptr<Communicator> comm_;
  std::string description_;
  c10::Event end_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_alive_;
  const bool blocking_;
  mutable std::mutex mutex_;
  std::exception_ptr error_;
  bool done_ = false;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace torch_backend::distributed
