// Internal: random ops in the CPU fallback draw from the device generator.
// A CPU generator stands in for it during one op: the device generator's
// state goes in before and comes back after.
#pragma once
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/stack.h>

#include <torch_backend/Generator.h>

#include <mutex>
#include <optional>

namespace torch_backend {

class GeneratorBridge {
 public:
  GeneratorBridge(const c10::IValue& arg, c10::Device device) {
    if (arg.isGenerator()) {
      device_gen_ = arg.toGenerator();
      TORCH_CHECK(device_gen_.device().type() == c10::DeviceType::PrivateUse1,
                  "Expected a '", device.type(),
                  "' device type for generator but found '",
                  device_gen_.device().type(), "'");
    } else {
      device_gen_ = default_generator(device.index());
    }
    lock_ = std::unique_lock<std::mutex>(device_gen_.mutex());
    cpu_gen_ = at::make_generator<at::CPUGeneratorImpl>();
    cpu_gen_.set_state(device_gen_.get_state());
  }

  at::Generator cpu() const { return cpu_gen_; }
  void write_back() { device_gen_.set_state(cpu_gen_.get_state()); }

 private:
  at::Generator device_gen_;
  at::Generator cpu_gen_;
  std::unique_lock<std::mutex> lock_;
};

inline bool is_generator_arg(const c10::Argument& arg) {
  const auto& type = arg.type();
  return type->kind() == c10::TypeKind::OptionalType &&
         type->castRaw<c10::OptionalType>()->getElementType()->kind() ==
             c10::TypeKind::GeneratorType;
}

// Replaces the generator argument of the op on `stack` (if it has one) by a
// bridge for `device`; returns it so the caller writes the state back.
inline std::optional<GeneratorBridge> bridge_generator(
    const c10::FunctionSchema& schema, torch::jit::Stack* stack,
    c10::Device device) {
  const size_t first = stack->size() - schema.arguments().size();
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    if (is_generator_arg(schema.arguments()[i])) {
      std::optional<GeneratorBridge> bridge;
      bridge.emplace((*stack)[first + i], device);
      (*stack)[first + i] = bridge->cpu();
      return bridge;
    }
  }
  return std::nullopt;
}

}  // namespace torch_backend
