// The copying CPU fallback for devices whose memory the host cannot read:
// PyTorch's cpu_fallback copies arguments to the host, runs the CPU kernel
// and copies results and mutated arguments back. Random ops draw from the
// device's generator, as in the zero-copy fallback.
#include <ATen/native/CPUFallback.h>

#include <torch_backend/Runtime.h>

#include "Fallback.h"
#include "GeneratorBridge.h"

namespace torch_backend {
namespace {

// The device of the op's first device tensor or device argument.
c10::Device op_device(const c10::FunctionSchema& schema,
                      const torch::jit::Stack& stack) {
  const size_t first = stack.size() - schema.arguments().size();
  for (size_t i = first; i < stack.size(); ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor() && on_device(v.toTensor())) {
      return v.toTensor().device();
    }
    if (v.isDevice() && v.toDevice().type() == c10::DeviceType::PrivateUse1 &&
        v.toDevice().has_index()) {
      return v.toDevice();
    }
  }
  return {c10::DeviceType::PrivateUse1,
          static_cast<c10::DeviceIndex>(current_device())};
}

}  // namespace

void copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  apply_fallback_policy(op);
  const c10::FunctionSchema& schema = op.schema();
  auto generator = bridge_generator(schema, stack, op_device(schema, *stack));
  at::native::cpu_fallback(op, stack);
  if (generator) {
    generator->write_back();
  }
}

}  // namespace torch_backend
