// The zero-copy fallback without boxing, for the hottest element-wise ops.
// The boxed fallback packs every call into an IValue stack, and the CPU
// kernel unpacks it again; for a 16-element add that round trip is a large
// part of the cost. These typed kernels alias the arguments and call the CPU
// kernel through the op's own redispatch entry point instead. Semantics are
// those of host_fallback (same device rule, same result handling).
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/abs_ops.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/cos_ops.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/exp_ops.h>
#include <ATen/ops/log_ops.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/neg_ops.h>
#include <ATen/ops/relu_ops.h>
#include <ATen/ops/rsqrt_ops.h>
#include <ATen/ops/sigmoid_ops.h>
#include <ATen/ops/sin_ops.h>
#include <ATen/ops/sqrt_ops.h>
#include <ATen/ops/sub_ops.h>
#include <ATen/ops/tanh_ops.h>
#include <c10/core/DeviceGuard.h>

#include <torch_backend/HostAccess.h>
#include <torch_backend/Runtime.h>

#include "../bringup/OpReport.h"
#include "Fallback.h"

namespace torch_backend {
namespace {

at::Tensor host_arg(const at::Tensor& t) {
  return on_device(t) ? host_alias(t) : t;
}
const at::Scalar& host_arg(const at::Scalar& s) { return s; }

// The op's device (CUDA's one-device rule checked), made current and with
// its stream's earlier work finished, as host_fallback does.
template <class... Args>
c10::Device checked_device(const Args&... args) {
  DeviceCheck check(false);
  (check.see_argument(args), ...);
  std::optional<c10::Device> device = check.device();
  return device ? *device
                : c10::Device(c10::DeviceType::PrivateUse1,
                              static_cast<c10::DeviceIndex>(current_device()));
}

const c10::DispatchKeySet kCpu(c10::DispatchKey::CPU);

template <class Op, class Sig = typename Op::schema>
struct Unboxed;

// Functional: the result is a fresh (routed) allocation or a view.
template <class Op, class... Args>
struct Unboxed<Op, at::Tensor(Args...)> {
  static inline const char* op_name = "";  // set at registration

  static at::Tensor call(Args... args) {
    refuse_fallback_while_capturing(op_name);
    const FallbackCallCount count(OpPath::ZeroCopyFallback, op_name);
    const c10::Device device = checked_device(args...);
    c10::DeviceGuard guard(device);
    wait_for_host_access(device);
    RoutedAllocationScope routed_scope;
    at::Tensor out;
    {
      RouteCpuAllocations route(device.index());
      out = Op::redispatch(kCpu, host_arg(args)...);
    }
    AdoptedStorages adopted;
    return result_to_device(out, device, adopted);
  }
};

// In-place on `self`: element-wise in-place ops never resize it.
template <class Op, class... Rest>
struct Unboxed<Op, at::Tensor&(at::Tensor&, Rest...)> {
  static inline const char* op_name = "";  // set at registration

  static at::Tensor& call(at::Tensor& self, Rest... rest) {
    refuse_fallback_while_capturing(op_name);
    const FallbackCallCount count(OpPath::ZeroCopyFallback, op_name);
    const c10::Device device = checked_device(self, rest...);
    c10::DeviceGuard guard(device);
    wait_for_host_access(device);
    RoutedAllocationScope routed_scope;
    at::Tensor alias = host_arg(self);
    {
      RouteCpuAllocations route(device.index());
      Op::redispatch(kCpu, alias, host_arg(rest)...);
    }
    return self;
  }
};

struct Entry {
  const char* name;
  void (*register_in)(torch::Library&, const char*);
};

template <class Op>
constexpr Entry entry(const char* name) {
  return {name, [](torch::Library& lib, const char* n) {
            Unboxed<Op>::op_name = n;
            lib.impl(n, TORCH_FN(Unboxed<Op>::call));
          }};
}

namespace ops = at::_ops;
const Entry kEntries[] = {
    entry<ops::add_Tensor>("add.Tensor"),
    entry<ops::sub_Tensor>("sub.Tensor"),
    entry<ops::mul_Tensor>("mul.Tensor"),
    entry<ops::div_Tensor>("div.Tensor"),
    entry<ops::add__Tensor>("add_.Tensor"),
    entry<ops::sub__Tensor>("sub_.Tensor"),
    entry<ops::mul__Tensor>("mul_.Tensor"),
    entry<ops::div__Tensor>("div_.Tensor"),
    entry<ops::abs>("abs"),
    entry<ops::neg>("neg"),
    entry<ops::sqrt>("sqrt"),
    entry<ops::rsqrt>("rsqrt"),
    entry<ops::exp>("exp"),
    entry<ops::log>("log"),
    entry<ops::sin>("sin"),
    entry<ops::cos>("cos"),
    entry<ops::tanh>("tanh"),
    entry<ops::sigmoid>("sigmoid"),
    entry<ops::relu>("relu"),
    entry<ops::relu_>("relu_"),
};

}  // namespace

std::vector<std::string> register_unboxed_fallbacks(
    torch::Library& aten, bool (*eligible)(const c10::OperatorHandle&)) {
  std::vector<std::string> registered;
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const Entry& e : kEntries) {
    const std::string qualified = std::string("aten::") + e.name;
    const auto dot = qualified.find('.');
    auto op = dispatcher.findOp(
        {qualified.substr(0, dot),
         dot == std::string::npos ? "" : qualified.substr(dot + 1)});
    if (op && eligible(*op)) {
      e.register_in(aten, e.name);
      registered.emplace_back(e.name);
    }
  }
  return registered;
}

}  // namespace torch_backend
