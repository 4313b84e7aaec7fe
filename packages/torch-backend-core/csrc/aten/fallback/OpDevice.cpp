// The device a boxed fallback call runs on, with CUDA's one-device rule
// checked first: both fallbacks (zero-copy and copying) must refuse
// `fake:0 @ fake:1` the way a device kernel would, or the copying one would
// silently compute on tensors of two devices.
#include <c10/util/Exception.h>

#include <torch_backend/Runtime.h>

#include "Fallback.h"

namespace torch_backend {

c10::Device op_device(const c10::OperatorHandle& op,
                      const torch::jit::Stack& stack) {
  const size_t first = stack.size() - op.schema().arguments().size();
  DeviceCheck check(&op);
  for (size_t i = first; i < stack.size(); ++i) {
    for_each_tensor(stack[i], [&](const at::Tensor& t) { check.see(t); });
  }
  std::optional<c10::Device> device = check.device();
  if (!device) {  // a factory: its device argument
    for (size_t i = first; i < stack.size(); ++i) {
      const c10::IValue& v = stack[i];
      if (v.isDevice() && v.toDevice().type() == c10::DeviceType::PrivateUse1) {
        device = v.toDevice();
      }
    }
  }
  if (!device) {
    device = c10::Device(c10::DeviceType::PrivateUse1);
  }
  if (!device->has_index()) {
    device->set_index(static_cast<c10::DeviceIndex>(current_device()));
  }
  return *device;
}

}  // namespace torch_backend
