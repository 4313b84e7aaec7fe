// Every op without a device kernel runs on the CPU: inputs are copied to the
// host, the CPU kernel runs, results and mutated arguments are copied back.
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include "Registration.h"

namespace torch_backend {
namespace {

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  at::native::cpu_fallback(op, stack);
}

}  // namespace

void register_cpu_fallback() {
  // Leaked on purpose, like the kernel library.
  auto* lib =
      new torch::Library(torch::Library::IMPL, "_",
                         c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  lib->fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

}  // namespace torch_backend
