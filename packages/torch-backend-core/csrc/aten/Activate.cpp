#include <torch_backend/Activate.h>

#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/Allocator.h>
#include <torch/library.h>

#include <torch_backend/Allocator.h>
#include <torch_backend/Runtime.h>

#include "../memory/HostAllocator.h"
#include "../runtime/Guard.h"
#include "Registration.h"
#include "bringup/ForcedFallback.h"
#include "kernels/KernelTable.h"
#include "kernels/OpTable.h"

namespace torch_backend {

void activate(DeviceRuntime* runtime) {
  // Reads TORCH_BACKEND_FORCE_FALLBACK: an invalid one fails the activation
  // before anything is registered.
  forced_to_fallback("");
  set_active_runtime(runtime);  // throws on a second activation
  register_device_guard();
  c10::SetAllocator(c10::DeviceType::PrivateUse1, device_allocator());
  at::setHostAllocator(c10::DeviceType::PrivateUse1, host_allocator());
  register_hooks();
  register_minimal_kernels();
  register_shallow_copy_compatibility();
  auto* lib = new torch::Library(torch::Library::IMPL, "aten",
                                 c10::DispatchKey::PrivateUse1, __FILE__,
                                 __LINE__);  // leaked, like core's own
  // The backend's own kernels first: the fallback fills only the gaps.
  load_device_kernels(runtime);
  register_elementwise_kernels(*lib);
  register_foreach_kernels(*lib);
  register_reduction_kernels(*lib);
  register_gemm_kernels(*lib);
  register_softmax_kernels(*lib);
  register_loss_kernels(*lib);
  register_copy_kernels(*lib);
  register_index_kernels(*lib);
  register_norm_kernels(*lib);
  register_random_kernels(*lib);
  register_convolution_kernels(*lib);
  register_pooling_kernels(*lib);
  register_attention_kernels(*lib);
  register_composite_kernels(*lib);
  register_stub_kernels(*lib);
  if (void* registrar = kernel_registrar_of(runtime)) {
    reinterpret_cast<void (*)(torch::Library&)>(registrar)(*lib);
  }
  register_rnn_cells(*lib);  // where the backend brought none
  register_cpu_fallback();
  register_autocast();
}

}  // namespace torch_backend
