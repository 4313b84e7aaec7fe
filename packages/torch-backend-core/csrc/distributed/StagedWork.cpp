#include "StagedWork.h"

#include <ATen/core/ivalue.h>

#include <algorithm>

namespace torch_backend::distributed {

StagedWork::StagedWork(c10::intrusive_ptr<c10d::Work> inner,
                       std::shared_ptr<Completion> completion)
    : c10d::Work(-1, inner->retrieveOpType()),
      inner_(std::move(inner)),
      completion_(std::move(completion)) {}

bool StagedWork::isCompleted() {
  if (!inner_->isCompleted()) {
    return false;
  }
  if (inner_->isSuccess()) {
    completion_->run();
  }
  return true;
}

bool StagedWork::isSuccess() const { return inner_->isSuccess(); }

std::exception_ptr StagedWork::exception() const { return inner_->exception(); }

int StagedWork::sourceRank() const { return inner_->sourceRank(); }

std::vector<at::Tensor> StagedWork::result() { return completion_->results; }

void StagedWork::synchronize() { completion_->run(); }

bool StagedWork::wait(std::chrono::milliseconds timeout) {
  // Throws Gloo's error (a dead peer, a timeout) before anything is copied.
  inner_->wait(timeout);
  completion_->run();
  return true;
}

void StagedWork::abort() { inner_->abort(); }

c10::intrusive_ptr<c10::ivalue::Future> StagedWork::getFuture() {
  std::lock_guard<std::mutex> lock(future_mutex_);
  if (!future_) {
    // Completes (on Gloo's thread) once the results are on the device; an
    // error in Gloo or in the copy becomes the future's error.
    future_ = inner_->getFuture()->then(
        [completion = completion_](c10::ivalue::Future&) {
          completion->run();
          return c10::IValue(completion->results);
        },
        c10::ListType::ofTensors());
  }
  return future_;
}

CoalescedWork::CoalescedWork(std::vector<c10::intrusive_ptr<c10d::Work>> works)
    : c10d::Work(-1, c10d::OpType::COALESCED), works_(std::move(works)) {}

bool CoalescedWork::isCompleted() {
  return std::all_of(works_.begin(), works_.end(),
                     [](const auto& w) { return w->isCompleted(); });
}

bool CoalescedWork::isSuccess() const {
  return std::all_of(works_.begin(), works_.end(),
                     [](const auto& w) { return w->isSuccess(); });
}

std::exception_ptr CoalescedWork::exception() const {
  for (const auto& w : works_) {
    if (auto error = w->exception()) {
      return error;
    }
  }
  return nullptr;
}

std::vector<at::Tensor> CoalescedWork::result() {
  std::vector<at::Tensor> all;
  for (const auto& w : works_) {
    auto part = w->result();
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

bool CoalescedWork::wait(std::chrono::milliseconds timeout) {
  for (const auto& w : works_) {
    w->wait(timeout);
  }
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> CoalescedWork::getFuture() {
  c10::List<c10::intrusive_ptr<c10::ivalue::Future>> futures(
      c10::FutureType::create(c10::ListType::ofTensors()));
  for (const auto& w : works_) {
    futures.push_back(w->getFuture());
  }
  return c10::collectAll(futures)->then(
      [works = works_](c10::ivalue::Future& all) {
        for (const auto& f : all.value().toList()) {
          auto future = f.get().toFuture();
          if (future->hasError()) {
            std::rethrow_exception(future->exception_ptr());
          }
        }
        std::vector<at::Tensor> results;
        for (const auto& w : works) {
          auto part = w->result();
          results.insert(results.end(), part.begin(), part.end());
        }
        return c10::IValue(results);
      },
      c10::ListType::ofTensors());
}

}  // namespace torch_backend::distributed
