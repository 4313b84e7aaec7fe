#include "NativeWork.h"

#include "EndProcess.h"
#include "FlightRecorder.h"

#include <ATen/core/ivalue.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <thread>

namespace torch_backend::distributed {

namespace {
thread_local bool t_watchdog_thread = false;
}  // namespace

void mark_watchdog_thread() { t_watchdog_thread = true; }

bool on_watchdog_thread() { return t_watchdog_thread; }

WorkState::WorkState(std::shared_ptr<Communicator> comm,
                     std::string description, bool end_process_on_error,
                     bool watchdog_publishes)
    : comm(std::move(comm)),
      description(std::move(description)),
      end_process_on_error(end_process_on_error),
      watchdog_publishes(watchdog_publishes),
      end(this->comm->device().type()) {}

void WorkState::record_end() {
  add_stream_dependency(comm->stream(), shared_from_this());
  end.record(comm->stream());
  std::lock_guard<std::mutex> lock(mutex_);
  recorded_ = true;
  enqueued_ = std::chrono::steady_clock::now();
}

bool WorkState::poll() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_ || error_) {
      return true;
    }
    if (!recorded_) {
      return false;
    }
  }
  // The end first: a library publishes a collective's failure before its
  // stream work ends, so an ended collective with no error by then succeeded.
  const bool ended = [this] {
    const UncheckedQueries unchecked;  // whether it ended, not how
    return end.query();
  }();
  std::string async = comm->async_error();
  if (!async.empty()) {
    async += " (" + std::string(comm->library().library_name()) + ", " +
             comm->describe() + ")";
    if (!watchdog_publishes) {
      fail(async);
    } else if (on_watchdog_thread()) {
      std::lock_guard<std::mutex> lock(mutex_);
      unpublished_ = async;  // published by fail(), after the dumps
    } else {
      await_publication(async);
    }
    return true;
  }
  if (!ended) {
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  done_ = true;
  progress->finish();
  return true;
}

void WorkState::await_publication(const std::string& async) {
  // The watchdog polls every 100 ms, then waits at most the dump wait for
  // the dumps; past that (a watchdog that cannot run), publish it here.
  const auto bound =
      std::chrono::milliseconds(dump_wait_ms()) + std::chrono::seconds(5);
  std::unique_lock<std::mutex> lock(mutex_);
  const bool published = published_.wait_for(
      lock, bound, [this] { return error_ != nullptr || done_; });
  lock.unlock();
  if (!published) {
    fail(async);
  }
}

std::string WorkState::unpublished_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return unpublished_;
}

void WorkState::fail(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (done_ || error_) {
    return;
  }
  published_.notify_all();  // (the waiters wake once the lock is released)
  try {
    // The watchdog's reason names the collective that timed out: itself here.
    const bool names_itself = why.rfind(description, 0) == 0;
    C10_THROW_ERROR(DistBackendError,
                    names_itself ? why : description + " failed: " + why);
  } catch (...) {
    error_ = std::current_exception();
  }
}

std::exception_ptr WorkState::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

StreamDependency::State WorkState::state() {
  poll();
  std::lock_guard<std::mutex> lock(mutex_);
  return error_ ? State::Failed : done_ ? State::Succeeded : State::Running;
}

std::chrono::milliseconds WorkState::running_for() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!recorded_) {
    return std::chrono::milliseconds(0);
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - enqueued_);
}

NativeWork::NativeWork(std::shared_ptr<WorkState> state, c10d::OpType type,
                       std::vector<at::Tensor> outputs,
                       std::vector<at::Tensor> keep_alive, bool blocking)
    : c10d::Work(state->comm->rank(), type),
      state_(std::move(state)),
      outputs_(std::move(outputs)),
      keep_alive_(std::move(keep_alive)),
      blocking_(blocking) {}

void NativeWork::throw_if_failed() {
  state_->poll();
  if (std::exception_ptr error = state_->error()) {
    if (state_->end_process_on_error) {
      try {
        std::rethrow_exception(error);
      } catch (const c10::Error& e) {
        end_process(e.what_without_backtrace());
      }
    }
    std::rethrow_exception(error);
  }
}

bool NativeWork::isCompleted() { return state_->poll(); }

bool NativeWork::isSuccess() const { return !state_->error(); }

std::exception_ptr NativeWork::exception() const { return state_->error(); }

std::vector<at::Tensor> NativeWork::result() { return outputs_; }

void NativeWork::synchronize() {
  throw_if_failed();
  const c10::Device device = state_->comm->device();
  const c10::impl::VirtualGuardImpl guard(device.type());
  const c10::Stream current = guard.getStream(device);
  // Before the wait is enqueued: a failure from now on fails `current`.
  add_stream_dependency(current, state_);
  state_->end.block(current);
}

bool NativeWork::wait(std::chrono::milliseconds timeout) {
  synchronize();
  if (timeout == kNoTimeout && !blocking_) {
    return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!state_->poll()) {
    if (timeout != kNoTimeout && std::chrono::steady_clock::now() > deadline) {
      state_->fail("not done within the wait's timeout of " +
                   std::to_string(timeout.count()) + " ms");
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  throw_if_failed();
  return true;
}

void NativeWork::abort() {
  state_->poll();
  state_->fail("aborted");
  state_->comm->abort();
}

c10::intrusive_ptr<c10::ivalue::Future> NativeWork::getFuture() {
  std::lock_guard<std::mutex> lock(future_mutex_);
  if (!future_) {
    // A device-aware future: completed now with the communication stream
    // current, it records that stream's work, and its users' streams wait
    // for it (DDP's communication hooks chain work on it).
    const c10::Device device = state_->comm->device();
    future_ = c10::make_intrusive<c10::ivalue::Future>(
        c10::ListType::ofTensors(), std::vector<c10::Device>{device});
    const c10::StreamGuard on_comm(state_->comm->stream());
    future_->markCompleted(c10::IValue(outputs_));
  }
  return future_;
}

}  // namespace torch_backend::distributed
