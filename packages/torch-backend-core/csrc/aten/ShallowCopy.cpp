// Parameter identity across devices: `module.to(device)` and
// `param.data = device_tensor` keep the Parameter object (and so weight ties,
// optimizer references and hooks), as they do for CUDA.
//
// Both ask aten::_has_compatible_shallow_copy_type whether the old tensor's
// TensorImpl may take the new one's metadata in place (Module._apply through
// torch._has_compatible_shallow_copy_type; Variable::set_data in C++).
// PyTorch's answer (TensorImpl::has_compatible_shallow_copy_type) counts CPU,
// CUDA, HIP, XPU, MPS, HPU and MTIA as interchangeable dense backends, and not
// PrivateUse1 (pytorch/pytorch#196975), so Module._apply makes a new Parameter
// per reference and splits every tie. Our device tensors are plain dense
// TensorImpls like theirs, so the answer for them is the same: yes.
//
// The op is CompositeImplicitAutograd; a call with a device tensor among its
// two arguments dispatches on PrivateUse1 (the highest backend of the two),
// so registering there answers for both directions without touching
// PyTorch's Python functions. Autograd and backend keys both: inference mode
// dispatches below autograd.
#include <ATen/core/Tensor.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/TensorImpl.h>
#include <torch/library.h>

#include <typeinfo>

#include "Registration.h"

namespace torch_backend {
namespace {

// A dense tensor of a backend whose TensorImpl is the plain one (PyTorch's
// interchangeable list plus PrivateUse1).
bool is_plain_dense(c10::DispatchKeySet keys) {
  constexpr auto backends = c10::DispatchKeySet(
      {c10::BackendComponent::CPUBit, c10::BackendComponent::CUDABit,
       c10::BackendComponent::MPSBit, c10::BackendComponent::HIPBit,
       c10::BackendComponent::XPUBit, c10::BackendComponent::HPUBit,
       c10::BackendComponent::MTIABit, c10::BackendComponent::PrivateUse1Bit});
  return keys.has(c10::DispatchKey::Dense) && keys.has_any(backends);
}

bool has_compatible_shallow_copy_type(const at::Tensor& self,
                                      const at::Tensor& from) {
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  // PyTorch's own answer first: it covers sparse layouts and subclasses of
  // TensorImpl that override it.
  if (impl->has_compatible_shallow_copy_type(from.key_set())) {
    return true;
  }
  // Two plain TensorImpls (same C++ type): shallow_copy_from then carries
  // storage, sizes, strides, device and dispatch keys across, as it does
  // between CPU and CUDA.
  return typeid(*impl) == typeid(*from.unsafeGetTensorImpl()) &&
         typeid(*impl) == typeid(c10::TensorImpl) &&
         is_plain_dense(self.key_set()) && is_plain_dense(from.key_set());
}

}  // namespace

void register_shallow_copy_compatibility() {
  for (const auto key :
       {c10::DispatchKey::AutogradPrivateUse1, c10::DispatchKey::PrivateUse1}) {
    // Leaked, like core's other libraries.
    auto* lib = new torch::Library(torch::Library::IMPL, "aten", key, __FILE__,
                                   __LINE__);
    lib->impl("_has_compatible_shallow_copy_type",
              TORCH_FN(has_compatible_shallow_copy_type));
  }
}

}  // namespace torch_backend
