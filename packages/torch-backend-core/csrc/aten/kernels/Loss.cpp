// ATen kernels for nll_loss (and so cross_entropy, which PyTorch composes
// from log_softmax and nll_loss), forward and backward, over the backend's
// nll_loss kernels. The structured meta classes check shapes and size the
// results; targets are checked here, once, as the CPU kernel checks them.
#include <ATen/ops/nll_loss_backward_meta.h>
#include <ATen/ops/nll_loss_forward_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <tuple>

#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"
#include "Structured.h"

namespace torch_backend {
namespace {

using at::Tensor;
using OptionalTensor = std::optional<Tensor>;

at::OptionalTensorRef weight_ref(const OptionalTensor& weight) {
  return weight && weight->defined() ? at::OptionalTensorRef(*weight)
                                     : at::OptionalTensorRef();
}

TensorView weight_view(const OptionalTensor& weight) {
  return weight && weight->defined() ? view_of(*weight) : TensorView{};
}

bool supported(const Tensor& input, const Tensor& target,
               const OptionalTensor& weight) {
  const bool weighted = weight && weight->defined();
  return kernel_dtypes(input) && at::isFloatingType(input.scalar_type()) &&
         target.scalar_type() == at::kLong &&
         (!weighted || weight->scalar_type() == input.scalar_type());
}

// IndexError for a target outside [0, classes) that is not ignore_index,
// as the CPU kernel raises.
void check_targets(const Tensor& target, int64_t classes,
                   int64_t ignore_index) {
  if (auto bad = first_out_of_range(target, classes, ignore_index)) {
    TORCH_CHECK_INDEX(false, "Target ", *bad, " is out of bounds.");
  }
}

Tensor as_batch(const Tensor& tensor, int64_t batch_dims) {
  return tensor.dim() < batch_dims ? tensor.unsqueeze(0) : tensor;
}

bool run_forward(const Tensor& output, const Tensor& total_weight,
                 const Tensor& input, const Tensor& target,
                 const OptionalTensor& weight, int64_t reduction,
                 int64_t ignore_index) {
  if (!supported(input, target, weight)) {
    return false;
  }
  c10::DeviceGuard guard(input.device());
  check_targets(target, input.size(-1), ignore_index);
  NllLossCall call;
  call.out =
      view_of(reduction == at::Reduction::None ? as_batch(output, 1) : output);
  call.total_weight = view_of(total_weight);
  call.input = view_of(as_batch(input, 2));
  call.target = view_of(as_batch(target, 1));
  call.weight = weight_view(weight);
  call.reduction = static_cast<Reduction>(reduction);
  call.ignore_index = ignore_index;
  return kernel_ran(nll_loss_kernel()(kernel_context(input.device()), call));
}

bool run_backward(const Tensor& grad_input, const Tensor& grad_output,
                  const Tensor& input, const Tensor& target,
                  const OptionalTensor& weight, int64_t reduction,
                  int64_t ignore_index, const Tensor& total_weight) {
  if (!supported(input, target, weight) ||
      grad_output.scalar_type() != input.scalar_type() ||
      total_weight.scalar_type() != input.scalar_type()) {
    return false;
  }
  c10::DeviceGuard guard(input.device());
  grad_input.zero_();
  NllLossBackwardCall call;
  call.grad_input = view_of(as_batch(grad_input, 2));
  call.grad_output =
      view_of(reduction == at::Reduction::None ? as_batch(grad_output, 1)
                                               : grad_output);
  call.target = view_of(as_batch(target, 1));
  call.weight = weight_view(weight);
  call.total_weight = view_of(total_weight);
  call.reduction = static_cast<Reduction>(reduction);
  call.ignore_index = ignore_index;
  return kernel_ran(
      nll_loss_backward_kernel()(kernel_context(input.device()), call));
}

std::optional<c10::OperatorHandle> nll_forward_op, nll_forward_out_op,
    nll_backward_op, nll_backward_out_op;

std::tuple<Tensor, Tensor> nll_loss_forward(const Tensor& self,
                                            const Tensor& target,
                                            const OptionalTensor& weight,
                                            int64_t reduction,
                                            int64_t ignore_index) {
  Functional<at::meta::structured_nll_loss_forward> meta;
  meta.meta(self, target, weight_ref(weight), reduction, ignore_index);
  auto& [output, total_weight] = meta.outputs_;
  if (run_forward(output, total_weight, self, target, weight, reduction,
                  ignore_index)) {
    return {output, total_weight};
  }
  torch::jit::Stack stack{self, target, weight, reduction, ignore_index};
  fall_back(*nll_forward_op, stack);
  return {stack[0].toTensor(), stack[1].toTensor()};
}

std::tuple<Tensor&, Tensor&> nll_loss_forward_out(
    const Tensor& self, const Tensor& target, const OptionalTensor& weight,
    int64_t reduction, int64_t ignore_index, Tensor& output,
    Tensor& total_weight) {
  Out<at::meta::structured_nll_loss_forward> meta(output, total_weight);
  meta.meta(self, target, weight_ref(weight), reduction, ignore_index);
  if (!run_forward(output, total_weight, self, target, weight, reduction,
                   ignore_index)) {
    torch::jit::Stack stack{self,         target, weight,      reduction,
                            ignore_index, output, total_weight};
    fall_back(*nll_forward_out_op, stack);
  }
  return {output, total_weight};
}

Tensor nll_loss_backward(const Tensor& grad_output, const Tensor& self,
                         const Tensor& target, const OptionalTensor& weight,
                         int64_t reduction, int64_t ignore_index,
                         const Tensor& total_weight) {
  Functional<at::meta::structured_nll_loss_backward> meta;
  meta.meta(grad_output, self, target, weight_ref(weight), reduction,
            ignore_index, total_weight);
  if (run_backward(meta.outputs_[0], grad_output, self, target, weight,
                   reduction, ignore_index, total_weight)) {
    return meta.outputs_[0];
  }
  torch::jit::Stack stack{grad_output, self,         target,      weight,
                          reduction,   ignore_index, total_weight};
  fall_back(*nll_backward_op, stack);
  return stack.back().toTensor();
}

Tensor& nll_loss_backward_out(const Tensor& grad_output, const Tensor& self,
                              const Tensor& target,
                              const OptionalTensor& weight, int64_t reduction,
                              int64_t ignore_index, const Tensor& total_weight,
                              Tensor& grad_input) {
  Out<at::meta::structured_nll_loss_backward> meta(grad_input);
  meta.meta(grad_output, self, target, weight_ref(weight), reduction,
            ignore_index, total_weight);
  if (!run_backward(grad_input, grad_output, self, target, weight, reduction,
                    ignore_index, total_weight)) {
    torch::jit::Stack stack{grad_output,  self,      target,
                            weight,       reduction, ignore_index,
                            total_weight, grad_input};
    fall_back(*nll_backward_out_op, stack);
  }
  return grad_input;
}

}  // namespace

std::vector<std::string> register_loss_kernels(torch::Library& aten) {
  if (nll_loss_kernel() == nullptr) {
    return {};
  }
  nll_forward_op = find_op("nll_loss_forward");
  nll_forward_out_op = find_op("nll_loss_forward.output");
  nll_backward_op = find_op("nll_loss_backward");
  nll_backward_out_op = find_op("nll_loss_backward.grad_input");
  register_kernel(aten, "nll_loss_forward", TORCH_FN(nll_loss_forward));
  register_kernel(aten, "nll_loss_forward.output",
                  TORCH_FN(nll_loss_forward_out));
  register_kernel(aten, "nll_loss_backward", TORCH_FN(nll_loss_backward));
  register_kernel(aten, "nll_loss_backward.grad_input",
                  TORCH_FN(nll_loss_backward_out));
  return {"nll_loss_forward", "nll_loss_forward.output", "nll_loss_backward",
          "nll_loss_backward.grad_input"};
}

}  // namespace torch_backend
