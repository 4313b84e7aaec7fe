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

// Times one fallback call of `op` (set only while a report is open) and
// counts it when the call ends, with the bytes it says it copied.
class FallbackCallCount {
 public:
  FallbackCallCount(OpPath path, bool open)
      : path_(path),
        open_(open),
        start_(open ? std::chrono::steady_clock::now()
                    : std::chrono::steady_clock::time_point()) {}
  FallbackCallCount(const FallbackCallCount&) = delete;
  FallbackCallCount& operator=(const FallbackCallCount&) = delete;
  ~FallbackCallCount();

  bool open() const { return open_; }
  void set_op(std::string op) { op_ = std::move(op); }
  void add_bytes(std::int64_t bytes) { bytes_ += bytes; }

 private:
  OpPath path_;
  bool open_;
  std::chrono::steady_clock::time_point start_;
  std::string op_;
  std::int64_t bytes_ = 0;
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
