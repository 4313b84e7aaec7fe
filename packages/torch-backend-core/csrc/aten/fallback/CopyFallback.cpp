// The copying CPU fallback for devices whose memory the host cannot read:
// PyTorch's cpu_fallback copies arguments to the host, runs the CPU kernel
// and copies results and mutated arguments back. Random ops draw from the
// device's generator, as in the zero-copy fallback.
#include <ATen/native/CPUFallback.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>

#include <string_view>

#include <torch_backend/Runtime.h>

#include "../bringup/OpReport.h"
#include "Fallback.h"
#include "GeneratorBridge.h"
#include "HostThreads.h"

namespace torch_backend {
namespace {

// Arguments CPU kernels write although the op's schema does not mark them
// mutable: native_batch_norm (and its out= form) update the running
// statistics in place. cpu_fallback copies back only annotated arguments, so
// these are staged here: a host copy goes in, and its values come back.
struct UndeclaredWrite {
  std::string_view op;  // "aten::native_batch_norm" (any overload)
  const char* arguments[2];
};
constexpr UndeclaredWrite kUndeclaredWrites[] = {
    {"aten::native_batch_norm", {"running_mean", "running_var"}},
};

struct StagedArgument {
  at::Tensor device;
  at::Tensor host;
};

c10::SmallVector<StagedArgument, 2> stage_undeclared_writes(
    const c10::OperatorHandle& op, torch::jit::Stack& stack) {
  c10::SmallVector<StagedArgument, 2> staged;
  const size_t first = stack.size() - op.schema().arguments().size();
  for (const UndeclaredWrite& entry : kUndeclaredWrites) {
    if (op.operator_name().name != entry.op) {
      continue;
    }
    for (const char* name : entry.arguments) {
      const auto index = op.schema().argumentIndexWithName(name);
      TORCH_INTERNAL_ASSERT(index.has_value(), entry.op, " has no ", name);
      c10::IValue& slot = stack[first + *index];
      if (slot.isTensor() && on_device(slot.toTensor())) {
        at::Tensor device = slot.toTensor();
        at::Tensor host = device.cpu();
        slot = host;
        staged.push_back({std::move(device), std::move(host)});
      }
    }
  }
  return staged;
}

// Bytes of the device tensors among the last `count` stack values: what
// cpu_fallback copies to the host (arguments) or back (results).
std::int64_t device_bytes(const torch::jit::Stack& stack, size_t count) {
  std::int64_t bytes = 0;
  const auto add = [&bytes](const at::Tensor& t) {
    if (t.defined() && on_device(t)) {
      bytes += static_cast<std::int64_t>(t.nbytes());
    }
  };
  for (size_t i = stack.size() - count; i < stack.size(); ++i) {
    const c10::IValue& value = stack[i];
    if (value.isTensor()) {
      add(value.toTensor());
    } else if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorVector()) {
        add(t);
      }
    }
  }
  return bytes;
}

}  // namespace

void copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  refuse_fallback_while_capturing(op);
  apply_fallback_policy(op);
  const c10::FunctionSchema& schema = op.schema();
  FallbackCallCount count(OpPath::CopyingFallback, op.operator_name());
  if (count.open()) {
    count.add_bytes(device_bytes(*stack, schema.arguments().size()));
  }
  auto generator = bridge_generator(schema, stack, op_device(op, *stack));
  auto staged = stage_undeclared_writes(op, *stack);
  {
    SerialForSmallWork serial(*stack, schema.arguments().size());
    at::native::cpu_fallback(op, stack);
  }
  if (count.open()) {
    count.add_bytes(device_bytes(*stack, schema.returns().size()));
  }
  for (StagedArgument& argument : staged) {
    argument.device.copy_(argument.host);
  }
  if (generator) {
    generator->write_back();
  }
}

}  // namespace torch_backend
