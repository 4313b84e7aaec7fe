// Registering the fallback: as PrivateUse1's boxed fallback, and directly as
// the PrivateUse1 kernel of every aten op that has a CPU kernel and no device
// kernel. The latter matters for the ~400 structured ops (add, mm, sum, ...):
// otherwise their CompositeExplicitAutogradNonFunctional kernel runs first
// and dispatches a second time to reach the fallback. On a device whose
// memory host code cannot address, the copying fallback serves everything
// except view ops, which keep aliasing (see below).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <algorithm>

#include <torch_backend/Runtime.h>

#include "../Registration.h"
#include "../bringup/OpReport.h"
#include "Fallback.h"

namespace torch_backend {
namespace {

// Ops whose generic kernel refuses other devices: convolution routes them to
// an "_overrideable" variant that only throws, mode's out= form checks for
// CPU, CUDA or XPU. On the CPU the same kernels do the real work.
constexpr const char* kCompositesRefusingDevices[] = {
    "convolution", "convolution_backward", "mode.values"};

bool wants_direct_fallback(const c10::OperatorHandle& op) {
  using c10::DispatchKey;
  return op.operator_name().name.rfind("aten::", 0) == 0 &&
         op.hasKernelForDispatchKey(DispatchKey::CPU) &&
         !op.hasKernelForDispatchKey(DispatchKey::PrivateUse1) &&
         !op.hasKernelForDispatchKey(DispatchKey::CompositeImplicitAutograd);
}

// Returns a view of an argument: its CPU kernel only computes metadata.
bool is_view_op(const c10::OperatorHandle& op) {
  for (const c10::Argument& ret : op.schema().returns()) {
    if (ret.alias_info() != nullptr && !ret.alias_info()->isWrite()) {
      return true;
    }
  }
  return false;
}

}  // namespace

void run_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (active_capabilities().host_addressable_memory) {
    host_fallback(op, stack);
  } else {
    copy_fallback(op, stack);
  }
}

void register_cpu_fallback() {
  const bool zero_copy = active_capabilities().host_addressable_memory;
  auto fallback =
      zero_copy ? torch::CppFunction::makeFromBoxedFunction<&host_fallback>
                : torch::CppFunction::makeFromBoxedFunction<&copy_fallback>;
  if (zero_copy) {
    install_cpu_allocation_routing();
  }
  // Leaked on purpose, like the kernel library.
  auto* everything =
      new torch::Library(torch::Library::IMPL, "_",
                         c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  everything->fallback(fallback());
  auto* aten =
      new torch::Library(torch::Library::IMPL, "aten",
                         c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  std::vector<std::string> unboxed;
  if (zero_copy && fallback_policy() == FallbackPolicy::Allow) {
    unboxed = register_unboxed_fallbacks(*aten, &wants_direct_fallback);
  }
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name :
       dispatcher.getAllOpNamesForDispatchKey(c10::DispatchKey::CPU)) {
    auto op = dispatcher.findOp(name);
    if (!op || !wants_direct_fallback(*op)) {
      continue;
    }
    const std::string qualified = qualified_op_name(name);
    if (zero_copy) {
      if (std::find(unboxed.begin(), unboxed.end(), qualified) ==
          unboxed.end()) {
        aten->impl(qualified.c_str(), fallback());
      }
    } else if (is_view_op(*op)) {
      // Copying would break a view's link to its base. View kernels only
      // compute sizes and strides, never touch the data, so the aliasing
      // fallback is safe for them even where host code cannot address
      // device memory: the result is a device view of the same storage.
      aten->impl(qualified.c_str(),
                 torch::CppFunction::makeFromBoxedFunction<&host_fallback>());
    }
  }
  for (const char* name : kCompositesRefusingDevices) {
    // Unless the backend's kernels took it (Convolution.cpp).
    const std::string qualified(name);
    const auto dot = qualified.find('.');
    auto op = dispatcher.findOp(c10::OperatorName(
        "aten::" + qualified.substr(0, dot),
        dot == std::string::npos ? "" : qualified.substr(dot + 1)));
    if (!op || !op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) {
      aten->impl(name, fallback());
    }
  }
}

}  // namespace torch_backend
