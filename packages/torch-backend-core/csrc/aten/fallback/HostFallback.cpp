// The zero-copy CPU fallback for host-addressable devices: device tensors are
// aliased as CPU tensors over the same memory, the CPU kernel runs on them,
// fresh outputs are allocated in device memory and relabelled, so no byte is
// copied. Random ops draw from the device's generator.
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>

#include <torch_backend/Allocator.h>
#include <torch_backend/Generator.h>
#include <torch_backend/HostAccess.h>
#include <torch_backend/Runtime.h>

#include "../bringup/OpReport.h"
#include "Fallback.h"
#include "GeneratorBridge.h"
#include "HostThreads.h"

namespace torch_backend {
namespace {

using c10::IValue;

IValue alias_value(const IValue& value) {
  if (value.isTensor()) {
    const at::Tensor& t = value.toTensor();
    return on_device(t) ? host_alias(t) : t;
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : value.toTensorVector()) {
      out.push_back(on_device(t) ? host_alias(t) : t);
    }
    return out;
  }
  if (value.isList() && value.toList().elementType()->kind() ==
                            c10::TypeKind::OptionalType) {  // Tensor?[]
    c10::List<std::optional<at::Tensor>> out;
    for (const IValue& item : value.toListRef()) {
      if (item.isTensor() && on_device(item.toTensor())) {
        out.push_back(host_alias(item.toTensor()));
      } else {
        out.push_back(item.toOptional<at::Tensor>());
      }
    }
    return out;
  }
  if (value.isDevice() &&
      value.toDevice().type() == c10::DeviceType::PrivateUse1) {
    return c10::Device(c10::DeviceType::CPU);
  }
  return value;
}

// The argument a returned alias refers to (same alias set), if any.
std::optional<size_t> aliased_argument(const c10::FunctionSchema& schema,
                                       const c10::Argument& ret) {
  if (ret.alias_info() == nullptr || !ret.alias_info()->isWrite()) {
    return std::nullopt;
  }
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].alias_info() != nullptr &&
        args[i].alias_info()->beforeSets() == ret.alias_info()->beforeSets()) {
      return i;
    }
  }
  return std::nullopt;
}

// After the CPU kernel: a mutated argument may have been resized/restrided
// (out= ops resize their outputs); carry that back to the device tensor.
void write_back_metadata(const at::Tensor& device, const at::Tensor& alias) {
  if (!on_device(device) || !alias.defined()) {
    return;
  }
  const c10::Storage& alias_storage = alias.storage();
  if (is_routed(alias_storage.data_ptr())) {
    // The kernel resized the argument into new (routed) device memory: the
    // device storage takes it over, so every tensor sharing it sees it.
    device.storage().set_data_ptr_noswap(
        take_routed(alias_storage, device.device()));
    device.storage().set_nbytes(alias_storage.nbytes());
  }
  if (device.sizes() != alias.sizes() || device.strides() != alias.strides() ||
      device.storage_offset() != alias.storage_offset()) {
    device.unsafeGetTensorImpl()->set_sizes_and_strides(
        alias.sizes(), alias.strides(), alias.storage_offset());
  }
}

IValue value_to_device(const IValue& value, c10::Device device,
                       AdoptedStorages& adopted) {
  if (value.isTensor()) {
    return result_to_device(value.toTensor(), device, adopted);
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : value.toTensorVector()) {
      out.push_back(result_to_device(t, device, adopted));
    }
    return out;
  }
  return value;
}

}  // namespace

at::Tensor result_to_device(const at::Tensor& cpu, c10::Device device,
                            AdoptedStorages& adopted) {
  if (!cpu.defined() || !cpu.is_cpu()) {
    return cpu;
  }
  at::Tensor view = device_view_of_alias(cpu);
  if (view.defined()) {
    return view;  // a view of an input
  }
  at::Tensor moved = adopt_routed_storage(cpu, device, adopted);
  if (moved.defined()) {
    return moved;  // a fresh output, already in device memory
  }
  return cpu.to(device);  // e.g. a kernel returning a cached CPU tensor
}

void host_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  refuse_fallback_while_capturing(op);
  apply_fallback_policy(op);
  const FallbackCallCount count(OpPath::ZeroCopyFallback, op.operator_name());
  const c10::FunctionSchema& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const size_t first = stack->size() - num_args;

  const c10::Device device = op_device(op, *stack);
  c10::DeviceGuard guard(device);
  wait_for_host_access(device);
  RoutedAllocationScope routed_scope;

  // Arguments the op writes (in-place, out=): the caller's tensors, kept to
  // return them and to carry metadata changes back; and their aliases.
  struct Written {
    size_t index;
    IValue original;
    IValue alias;
  };
  c10::SmallVector<Written, 2> written;
  std::optional<GeneratorBridge> generator;
  for (size_t i = 0; i < num_args; ++i) {
    const c10::Argument& arg = schema.arguments()[i];
    IValue& slot = (*stack)[first + i];
    if (is_generator_arg(arg)) {
      generator.emplace(slot, device);
      slot = generator->cpu();
    } else if (arg.alias_info() != nullptr) {
      IValue original = slot;
      slot = alias_value(slot);
      written.push_back({i, std::move(original), slot});
    } else {
      slot = alias_value(slot);
    }
  }
  {
    RouteCpuAllocations route(device.index());
    SerialForSmallWork serial(*stack, num_args);
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  }
  if (generator) {
    generator->write_back();
  }

  for (const Written& w : written) {
    if (!schema.arguments()[w.index].alias_info()->isWrite()) {
      continue;
    }
    if (w.original.isTensor()) {
      write_back_metadata(w.original.toTensor(), w.alias.toTensor());
    } else if (w.original.isTensorList()) {
      const auto devs = w.original.toTensorVector();
      const auto cpus = w.alias.toTensorVector();
      for (size_t k = 0; k < devs.size(); ++k) {
        write_back_metadata(devs[k], cpus[k]);
      }
    }
  }

  const auto& returns = schema.returns();
  const size_t first_ret = stack->size() - returns.size();
  AdoptedStorages adopted;
  for (size_t r = 0; r < returns.size(); ++r) {
    IValue& slot = (*stack)[first_ret + r];
    const auto arg = aliased_argument(schema, returns[r]);
    const Written* caller = nullptr;
    for (const Written& w : written) {
      if (arg && w.index == *arg) {
        caller = &w;
      }
    }
    if (caller != nullptr) {
      slot = caller->original;  // in-place and out=: the caller's own tensor
    } else {
      slot = value_to_device(slot, device, adopted);
    }
  }
}

}  // namespace torch_backend
