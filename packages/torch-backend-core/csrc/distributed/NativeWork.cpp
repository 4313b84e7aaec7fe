#include "NativeWork.h"

#include <ATen/core/ivalue.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <thread>

namespace torch_backend::distributed {

NativeWork::NativeWork(std::shared_ptr<Communicator> comm, c10d::OpType type,
                       std::string description, std::vector<at::Tensor> outputs,
                       std::vector<at::Tensor> keep_alive, bool blocking)
    : c10d::Work(comm->rank(), type),
      comm_(std::move(comm)),
      description_(std::move(description)),
      end_(comm_->device().type()),
      outputs_(std::move(outputs)),
      keep_alive_(std::move(keep_alive)),
      blocking_(blocking) {}

void NativeWork::record_end() { end_.record(comm_->stream()); }

void NativeWork::fail(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (done_ || error_) {
    return;
  }
  try {
    C10_THROW_ERROR(DistBackendError, description_ + " failed: " + why);
  } catch (...) {
    error_ = std::current_exception();
  }
}

void NativeWork::throw_if_failed() {
  const std::string async = comm_->async_error();
  if (!async.empty()) {
    fail(async + " (" + comm_->library().library_name() + ", " +
         comm_->describe() + ")");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_) {
    std::rethrow_exception(error_);
  }
}

bool NativeWork::isCompleted() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_ || error_) {
      return true;
    }
  }
  const std::string async = comm_->async_error();
  if (!async.empty()) {
    fail(async);
    return true;
  }
  if (!end_.query()) {
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  done_ = true;
  keep_alive_.clear();  // the stream is past them
  return true;
}

bool NativeWork::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !error_;
}

std::exception_ptr NativeWork::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

std::vector<at::Tensor> NativeWork::result() { return outputs_; }

void NativeWork::synchronize() {
  throw_if_failed();
  const c10::impl::VirtualGuardImpl guard(comm_->device().type());
  end_.block(guard.getStream(comm_->device()));
}

bool NativeWork::wait(std::chrono::milliseconds timeout) {
  synchronize();
  if (timeout == kNoTimeout && !blocking_) {
    return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!isCompleted()) {
    if (timeout != kNoTimeout && std::chrono::steady_clock::now() > deadline) {
      fail("not done within the wait's timeout of " +
           std::to_string(timeout.count()) + " ms");
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  throw_if_failed();
  return true;
}

void NativeWork::abort() {
  comm_->abort();
  fail("aborted");
}

c10::intrusive_ptr<c10::ivalue::Future> NativeWork::getFuture() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!future_) {
    // A device-aware future: completed now with the communication stream
    // current, it records that stream's work, and its users' streams wait
    // for it (DDP's communication hooks chain work on it).
    future_ = c10::make_intrusive<c10::ivalue::Future>(
        c10::ListType::ofTensors(), std::vector<c10::Device>{comm_->device()});
    const c10::StreamGuard on_comm(comm_->stream());
    future_->markCompleted(c10::IValue(outputs_));
  }
  return future_;
}

}  // namespace torch_backend::distributed
