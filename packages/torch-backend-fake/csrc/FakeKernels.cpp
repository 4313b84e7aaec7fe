// Example native kernel of the fake device: fill_ writes straight into device
// memory (host-addressable), skipping the generic fallback's argument
// aliasing and boxing. Every other op runs on core's CPU fallback.
#include <ATen/core/Tensor.h>

#include <torch_backend/HostAccess.h>
#include <torch_backend/Kernels.h>

namespace {

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  torch_backend::wait_for_host_access(self.device());
  torch_backend::host_alias(self).fill_(value);
  return self;
}

}  // namespace

TORCH_BACKEND_DEFINE_KERNELS(m) {
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar));
}
