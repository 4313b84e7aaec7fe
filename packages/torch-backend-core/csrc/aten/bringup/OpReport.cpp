#include "OpReport.h"

#include <c10/util/Exception.h>

#include <map>
#include <mutex>

namespace torch_backend {

std::atomic<bool> g_op_report_open{false};

namespace {

std::mutex g_rows_mutex;
std::map<std::string, OpReportRow>& rows() {
  static auto* table = new std::map<std::string, OpReportRow>();  // leaked:
  return *table;  // a hook may run during static destruction
}

}  // namespace

std::string qualified_op_name(const c10::OperatorName& name) {
  std::string qualified =
      name.name.rfind("aten::", 0) == 0 ? name.name.substr(6) : name.name;
  if (!name.overload_name.empty()) {
    qualified += "." + name.overload_name;
  }
  return qualified;
}

void count_op_call(const std::string& op, OpPath path,
                   std::int64_t bytes_copied, std::int64_t host_ns) {
  std::lock_guard<std::mutex> lock(g_rows_mutex);
  if (!op_report_open()) {
    return;  // closed while the call ran
  }
  OpReportRow& row = rows()[op];
  row.op = op;
  switch (path) {
    case OpPath::DeviceKernel:
      ++row.device_calls;
      break;
    case OpPath::ZeroCopyFallback:
      ++row.zero_copy_calls;
      break;
    case OpPath::CopyingFallback:
      ++row.copying_calls;
      break;
  }
  row.bytes_copied += bytes_copied;
  row.host_ns += host_ns;
}

FallbackCallCount::~FallbackCallCount() {
  if (open_ && !op_.empty()) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - start_)
                        .count();
    count_op_call(op_, path_, bytes_, ns);
  }
}

void open_op_report() {
  std::lock_guard<std::mutex> lock(g_rows_mutex);
  TORCH_CHECK(!op_report_open(),
              "an op report is already open in this process (one at a time)");
  rows().clear();
  g_op_report_open.store(true, std::memory_order_relaxed);
}

std::vector<OpReportRow> close_op_report() {
  std::lock_guard<std::mutex> lock(g_rows_mutex);
  g_op_report_open.store(false, std::memory_order_relaxed);
  std::vector<OpReportRow> out;
  out.reserve(rows().size());
  for (auto& [op, row] : rows()) {
    out.push_back(row);
  }
  rows().clear();
  return out;
}

}  // namespace torch_backend
