// Example native kernel of the fake device: fill_ writes straight into device
// memory (host-addressable), skipping the generic fallback's argument
// aliasing and boxing. With the device kernels on, core's fill_ over fake's
// "fill" kernel serves instead.
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

bool fake_device_kernels_enabled();  // FakeDeviceKernels.cpp

TORCH_BACKEND_DEFINE_KERNELS(m) {
  if (!fake_device_kernels_enabled()) {
    m.impl("fill_.Scalar", TORCH_FN(fill_scalar));
  }
}
