// ATen ops whose native implementation is device-generic except for one
// DispatchStub call (arange_out computes the size, resizes and builds the
// iterator, then calls arange_stub for the device type): core registers that
// native kernel for PrivateUse1 and serves the stub with a device kernel.
#include <ATen/native/RangeFactories.h>
#include <ATen/ops/arange_native.h>
#include <torch/library.h>

#include "../bringup/ForcedFallback.h"
#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"

namespace torch_backend {
namespace {

ElementwiseKernel arange_kernel = nullptr;

// out[i] = start + i * step over the iterator's one (contiguous) dimension.
void arange_on_device(at::TensorIterator& iter, const c10::Scalar& start,
                      const c10::Scalar& /*size*/, const c10::Scalar& step) {
  // Element-wise kernels never see an empty output (Elementwise.cpp skips
  // them too); ATen calls the stub for arange(1, 1) and arange(1, 1, -1).
  if (iter.numel() == 0) {
    return;
  }
  ElementwiseCall call;
  call.out = view_of(iter, 0);
  const at::ScalarType dtype = iter.dtype(0);
  // In the accumulate type, as the CPU kernel computes (double for floats).
  const at::ScalarType accumulate =
      at::isFloatingType(dtype) ? at::kDouble : at::kLong;
  call.scalars[0] = scalar_value(start, accumulate);
  call.scalars[1] = scalar_value(step, accumulate);
  call.num_scalars = 2;
  TORCH_CHECK(kernel_ran(arange_kernel(kernel_context(iter.device(0)), call)),
              "the device's arange kernel declined dtype ", dtype);
}

}  // namespace

std::vector<std::string> register_stub_kernels(torch::Library& aten) {
  arange_kernel = elementwise_kernel("arange");
  if (arange_kernel == nullptr || forced_to_fallback("arange.start_out")) {
    return {};
  }
  at::native::arange_stub.set_privateuse1_dispatch_ptr(&arange_on_device);
  aten.impl(
      "arange.start_out",
      TORCH_FN(static_cast<at::Tensor& (*)(const at::Scalar&, const at::Scalar&,
                                           const at::Scalar&, at::Tensor&)>(
          at::native::arange_out)));
  return {"arange.start_out"};
}

}  // namespace torch_backend
