// Registering the fallback: as PrivateUse1's boxed fallback, and directly as
// the PrivateUse1 kernel of every aten op that has a CPU kernel and no device
// kernel. The latter matters for the ~400 structured ops (add, mm, sum, ...):
// otherwise their CompositeExplicitAutogradNonFunctional kernel runs first
// and dispatches a second time to reach the fallback. On a device whose
// memory host code cannot address, the copying fallback serves everything
// except view ops, which keep aliasing (see below).
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/_native_batch_norm_legit.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <tuple>

#include <torch_backend/Runtime.h>

#include "../Registration.h"
#include "Fallback.h"

namespace torch_backend {
namespace {

// Ops whose generic kernel routes other devices to an "_overrideable"
// variant that only throws; on the CPU the same kernel does the real work.
constexpr const char* kOverrideableOps[] = {"convolution",
                                            "convolution_backward"};

// "add.Tensor" for aten::add.Tensor, as torch::Library::impl takes it.
std::string qualified_name(const c10::OperatorName& name) {
  std::string qualified = name.name.substr(6);  // drop "aten::"
  if (!name.overload_name.empty()) {
    qualified += "." + name.overload_name;
  }
  return qualified;
}

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

// native_batch_norm updates running_mean/running_var in place, but its schema
// does not mark them mutable, so the copying fallback (which writes back only
// annotated arguments) would drop the update. _native_batch_norm_legit is the
// same computation with the annotations: route through it.
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_annotated(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var, bool training,
    double momentum, double eps) {
  if (running_mean && running_mean->defined() && running_var &&
      running_var->defined()) {
    at::Tensor mean = *running_mean;  // shares the storage it updates
    at::Tensor var = *running_var;
    return at::_native_batch_norm_legit(input, weight, bias, mean, var,
                                        training, momentum, eps);
  }
  return at::_native_batch_norm_legit(input, weight, bias, training, momentum,
                                      eps);
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
    const std::string qualified = qualified_name(name);
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
  for (const char* name : kOverrideableOps) {
    aten->impl(name, fallback());
  }
  if (!zero_copy &&
      !dispatcher.findSchemaOrThrow("aten::native_batch_norm", "")
           .hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) {
    aten->impl("native_batch_norm", TORCH_FN(native_batch_norm_annotated));
  }
}

}  // namespace torch_backend
