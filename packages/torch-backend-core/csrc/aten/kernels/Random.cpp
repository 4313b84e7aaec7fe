// ATen kernels for dropout over the backend's counter-based dropout kernel.
// Each call keys the kernel with a 64-bit draw from the device generator, so
// masks are reproducible under torch.manual_seed and follow
// get_rng_state/set_rng_state and fork_rng like any random op. The backward
// is PyTorch's own device-generic native_dropout_backward (grad * mask *
// scale), which runs on the element-wise kernels.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/native_dropout_backward_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <mutex>
#include <tuple>

#include <torch_backend/Generator.h>

#include "../GraphRandom.h"
#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"

namespace torch_backend {
namespace {

using at::Tensor;

std::optional<c10::OperatorHandle> dropout_op;

std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p,
                                          std::optional<bool> train) {
  TORCH_CHECK(p >= 0 && p <= 1,
              "dropout probability has to be between 0 and 1, but got ", p);
  const bool training = !train.has_value() || *train;
  if (!training || input.numel() == 0 ||
      !at::isFloatingType(input.scalar_type()) || !kernel_dtypes(input)) {
    // Evaluation, nothing to draw, or a dtype kernels do not take: as ATen.
    torch::jit::Stack stack{input, p, train};
    fall_back(*dropout_op, stack);
    return {stack[0].toTensor(), stack[1].toTensor()};
  }
  c10::DeviceGuard guard(input.device());
  const Tensor x = input.contiguous();
  Tensor out = at::empty(input.sizes(), x.options());
  Tensor mask = at::empty(input.sizes(), x.options().dtype(at::kBool));
  DropoutCall call;
  call.out = view_of(out);
  call.mask = view_of(mask);
  call.input = view_of(x);
  call.p = p;
  // In a graph: a slot each replay refills (GraphRandom.h).
  call.seed = kernel_seed(input.device().index(), &call.seed_on_device);
  TORCH_CHECK(
      kernel_ran(dropout_kernel()(kernel_context(input.device()), call)),
      "the device's dropout kernel declined dtype ", input.scalar_type());
  return {out, mask};
}

}  // namespace

std::vector<std::string> register_random_kernels(torch::Library& aten) {
  if (dropout_kernel() == nullptr) {
    return {};
  }
  dropout_op = find_op("native_dropout");
  register_kernel(aten, "native_dropout", TORCH_FN(native_dropout));
  register_kernel(aten, "native_dropout_backward",
                  TORCH_FN(at::native::native_dropout_backward));
  return {"native_dropout", "native_dropout_backward"};
}

}  // namespace torch_backend
