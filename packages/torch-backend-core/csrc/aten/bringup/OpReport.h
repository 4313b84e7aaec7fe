// Internal: where ops ran, counted while a report is open
// (torch_backend.op_report(), `python -m torch_backend ops --run`): device
// kernel calls, zero-copy and copying fallback calls, the bytes the copying
// fallback moved and the host time the fallbacks took, per ATen overload
// ("add.Tensor"). Closed, each hook costs one relaxed atomic load.
#pragma once

#include <ATen/core/operator_name.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace torch_backend {

enum class OpPath : std::uint8_t {
  DeviceKernel,
  ZeroCopyFallback,
  CopyingFallback
};

extern std::atomic<bool> g_op_report_open;

inline bool op_report_open() {
  return g_op_report_open.load(std::memory_order_relaxed);
}

void count_op_call(const std::string& op, OpPath path,
                   std::int64_t bytes_copied, std::int64_t host_ns);

// "add.Tensor" for aten::add.Tensor: the op table's and torch::Library's
// spelling.
std::string qualified_op_name(const c10::OperatorName& name);

// Counts one call of a device kernel when the kernel returns, unless it
// declined the call (mark_declined: the fallback ran it, and counts it) or
// threw. Nests: a composite's own count is not its inner ops'.
class DeviceKernelCount {
 public:
  explicit DeviceKernelCount(const char* op)
      : op_(op),
        outer_declined_(declined_),
        exceptions_(std::uncaught_exceptions()) {
    declined_ = false;
  }
  DeviceKernelCount(const DeviceKernelCount&) = delete;
  DeviceKernelCount& operator=(const DeviceKernelCount&) = delete;
  ~DeviceKernelCount() {
    if (!declined_ && std::uncaught_exceptions() == exceptions_) {
      count_op_call(op_, OpPath::DeviceKernel, 0, 0);
    }
    declined_ = outer_declined_;
  }
  static void mark_declined() { declined_ = true; }

 private:
  inline static thread_local bool declined_ = false;
  const char* op_;
  bool outer_declined_;
  int exceptions_;
};

// While a report is open, times one fallback call of an op and counts it
// when the call ends, with the bytes it says it copied; else does nothing.
class FallbackCallCount {
 public:
  // `op` as the op table spells it ("add.Tensor").
  FallbackCallCount(OpPath path, const char* op) : FallbackCallCount(path) {
    if (open_) {
      op_ = op;
    }
  }
  // The name is spelled only while a report is open.
  FallbackCallCount(OpPath path, const c10::OperatorName& op)
      : FallbackCallCount(path) {
    if (open_) {
      op_ = qualified_op_name(op);
    }
  }
  FallbackCallCount(const FallbackCallCount&) = delete;
  FallbackCallCount& operator=(const FallbackCallCount&) = delete;
  ~FallbackCallCount();

  bool open() const { return open_; }
  void add_bytes(std::int64_t bytes) { bytes_ += bytes; }

 private:
  OpPath path_;
  bool open_;
  std::chrono::steady_clock::time_point start_;
  std::string op_;
  std::int64_t bytes_ = 0;

  explicit FallbackCallCount(OpPath path)
      : path_(path),
        open_(op_report_open()),
        start_(open_ ? std::chrono::steady_clock::now()
                     : std::chrono::steady_clock::time_point()) {}
};

struct OpReportRow {
  std::string op;
  std::int64_t device_calls = 0;
  std::int64_t zero_copy_calls = 0;
  std::int64_t copying_calls = 0;
  std::int64_t bytes_copied = 0;
  std::int64_t host_ns = 0;
};

// One report at a time per process; opening clears the counts.
void open_op_report();
std::vector<OpReportRow> close_op_report();

}  // namespace torch_backend
