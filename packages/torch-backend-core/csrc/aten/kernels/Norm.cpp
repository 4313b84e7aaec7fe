// ATen kernels for layer_norm and batch_norm, forward and backward, over the
// backend's norm kernels. ATen's own _check_layer_norm_inputs checks the shapes
// and splits the input into M rows of N normalised elements; the results
// have the shapes PyTorch's CPU kernel gives them.
#include <ATen/native/layer_norm.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <tuple>

#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"

namespace torch_backend {
namespace {

using at::Tensor;
using OptionalTensor = std::optional<Tensor>;

std::optional<c10::OperatorHandle> layer_forward_op, layer_backward_op;

const Tensor& value_or_undefined(const OptionalTensor& tensor) {
  static const Tensor undefined;
  return tensor ? *tensor : undefined;
}

TensorView view_or_absent(const Tensor& tensor) {
  return tensor.defined() ? view_of(tensor) : TensorView{};
}

bool supported(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  const auto dtype = input.scalar_type();
  return at::isFloatingType(dtype) && kernel_dtypes(input) &&
         (!weight.defined() || weight.scalar_type() == dtype) &&
         (!bias.defined() || bias.scalar_type() == dtype);
}

// mean and rstd: the input's leading dims, then 1 for each normalised one.
std::vector<int64_t> stat_shape(const Tensor& input, size_t normalized_ndim) {
  std::vector<int64_t> shape = input.sizes().vec();
  for (size_t i = shape.size() - normalized_ndim; i < shape.size(); ++i) {
    shape[i] = 1;
  }
  return shape;
}

std::tuple<Tensor, Tensor, Tensor> layer_forward(
    const Tensor& input, at::IntArrayRef normalized_shape,
    const OptionalTensor& weight_opt, const OptionalTensor& bias_opt,
    double eps) {
  const Tensor& weight = value_or_undefined(weight_opt);
  const Tensor& bias = value_or_undefined(bias_opt);
  const auto [rows, cols] = at::native::_check_layer_norm_inputs(
      input, normalized_shape, weight, bias);
  if (!supported(input, weight, bias)) {
    torch::jit::Stack stack{input, normalized_shape.vec(), weight_opt, bias_opt,
                            eps};
    fall_back(*layer_forward_op, stack);
    return {stack[0].toTensor(), stack[1].toTensor(), stack[2].toTensor()};
  }
  c10::DeviceGuard guard(input.device());
  const Tensor x = input.contiguous();
  Tensor out = at::empty(input.sizes(), x.options());
  const auto shape = stat_shape(input, normalized_shape.size());
  Tensor mean = at::empty(shape, x.options());
  Tensor rstd = at::empty(shape, x.options());
  if (rows > 0 && cols > 0) {
    LayerNormCall call;
    KeptTensors kept;
    call.input = view_of(x.view({rows, cols}));
    call.out = view_of(out.view({rows, cols}));
    call.mean = view_of(mean.view({rows}));
    call.rstd = view_of(rstd.view({rows}));
    call.weight =
        kept.view_or_absent(weight.defined() ? weight.reshape(-1) : weight);
    call.bias = kept.view_or_absent(bias.defined() ? bias.reshape(-1) : bias);
    call.eps = eps;
    TORCH_CHECK(
        kernel_ran(layer_norm_kernel()(kernel_context(input.device()), call)),
        "the device's layer_norm kernel declined dtype ", input.scalar_type());
  }
  return {out, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> layer_backward(
    const Tensor& grad_out, const Tensor& input,
    at::IntArrayRef normalized_shape, const Tensor& mean, const Tensor& rstd,
    const OptionalTensor& weight_opt, const OptionalTensor& bias_opt,
    std::array<bool, 3> output_mask) {
  const Tensor& weight = value_or_undefined(weight_opt);
  const Tensor& bias = value_or_undefined(bias_opt);
  const auto [rows, cols] = at::native::_check_layer_norm_inputs(
      input, normalized_shape, weight, bias);
  if (!supported(input, weight, bias) ||
      grad_out.scalar_type() != input.scalar_type()) {
    torch::jit::Stack stack{
        grad_out,
        input,
        normalized_shape.vec(),
        mean,
        rstd,
        weight_opt,
        bias_opt,
        c10::List<bool>({output_mask[0], output_mask[1], output_mask[2]})};
    fall_back(*layer_backward_op, stack);
    return {stack[0].toTensor(), stack[1].toTensor(), stack[2].toTensor()};
  }
  c10::DeviceGuard guard(input.device());
  Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    grad_input = at::empty(input.sizes(), input.options());
  }
  if (output_mask[1] && weight.defined()) {
    grad_weight = at::empty(weight.sizes(), weight.options());
  }
  if (output_mask[2] && bias.defined()) {
    grad_bias = at::empty(bias.sizes(), bias.options());
  }
  if (rows == 0 || cols == 0) {  // nothing flows: zero gradients
    for (Tensor* grad : {&grad_weight, &grad_bias}) {
      if (grad->defined()) {
        grad->zero_();
      }
    }
    return {grad_input, grad_weight, grad_bias};
  }
  LayerNormBackwardCall call;
  KeptTensors kept;
  call.grad_out = kept.view(grad_out.contiguous().view({rows, cols}));
  call.input = kept.view(input.contiguous().view({rows, cols}));
  call.mean = kept.view(mean.reshape(rows));
  call.rstd = kept.view(rstd.reshape(rows));
  call.weight =
      kept.view_or_absent(weight.defined() ? weight.reshape(-1) : weight);
  call.grad_input = view_or_absent(
      grad_input.defined() ? grad_input.view({rows, cols}) : grad_input);
  call.grad_weight = view_or_absent(grad_weight.defined() ? grad_weight.view(-1)
                                                          : grad_weight);
  call.grad_bias =
      view_or_absent(grad_bias.defined() ? grad_bias.view(-1) : grad_bias);
  TORCH_CHECK(kernel_ran(layer_norm_backward_kernel()(
                  kernel_context(input.device()), call)),
              "the device's layer_norm backward kernel declined dtype ",
              input.scalar_type());
  return {grad_input, grad_weight, grad_bias};
}

// ---- batch_norm -------------------------------------------------------------

std::optional<c10::OperatorHandle> batch_forward_op, batch_backward_op;

// (N, C, ...) as (N, C, L), contiguous.
Tensor as_ncl(const Tensor& tensor) {
  return tensor.contiguous().view({tensor.size(0), tensor.size(1), -1});
}

bool batch_supported(const Tensor& input,
                     std::initializer_list<const Tensor*> params) {
  if (input.dim() < 2 || !at::isFloatingType(input.scalar_type()) ||
      !kernel_dtypes(input)) {
    return false;
  }
  for (const Tensor* param : params) {
    if (param->defined() && param->scalar_type() != input.scalar_type()) {
      return false;  // mixed precision: the fallback's CPU kernel does it
    }
  }
  return true;
}

void check_channels(
    const Tensor& input,
    std::initializer_list<std::pair<const char*, const Tensor*>> params) {
  const int64_t channels = input.size(1);
  for (const auto& [name, param] : params) {
    TORCH_CHECK(!param->defined() || param->numel() == channels, name,
                " should contain ", channels, " elements not ", param->numel());
  }
}

std::tuple<Tensor, Tensor, Tensor> batch_forward(
    const Tensor& input, const OptionalTensor& weight_opt,
    const OptionalTensor& bias_opt, const OptionalTensor& mean_opt,
    const OptionalTensor& var_opt, bool training, double momentum, double eps) {
  const Tensor& weight = value_or_undefined(weight_opt);
  const Tensor& bias = value_or_undefined(bias_opt);
  const Tensor& running_mean = value_or_undefined(mean_opt);
  const Tensor& running_var = value_or_undefined(var_opt);
  if (!batch_supported(input, {&weight, &bias, &running_mean, &running_var}) ||
      input.numel() == 0 ||
      (!training && !(running_mean.defined() && running_var.defined()))) {
    torch::jit::Stack stack{input,   weight_opt, bias_opt, mean_opt,
                            var_opt, training,   momentum, eps};
    fall_back(*batch_forward_op, stack);
    return {stack[0].toTensor(), stack[1].toTensor(), stack[2].toTensor()};
  }
  check_channels(input, {{"weight", &weight},
                         {"bias", &bias},
                         {"running_mean", &running_mean},
                         {"running_var", &running_var}});
  c10::DeviceGuard guard(input.device());
  const Tensor x = as_ncl(input);
  Tensor out = at::empty(input.sizes(), x.options());
  const int64_t channels = input.size(1);
  Tensor save_mean = at::empty({training ? channels : 0}, x.options());
  Tensor save_invstd = at::empty({training ? channels : 0}, x.options());
  BatchNormCall call;
  call.out = view_of(out.view(x.sizes()));
  call.input = view_of(x);
  call.weight = view_or_absent(weight);
  call.bias = view_or_absent(bias);
  call.running_mean = view_or_absent(running_mean);
  call.running_var = view_or_absent(running_var);
  if (training) {
    call.save_mean = view_of(save_mean);
    call.save_invstd = view_of(save_invstd);
  }
  call.training = training;
  call.momentum = momentum;
  call.eps = eps;
  TORCH_CHECK(
      kernel_ran(batch_norm_kernel()(kernel_context(input.device()), call)),
      "the device's batch_norm kernel declined dtype ", input.scalar_type());
  return {out, save_mean, save_invstd};
}

std::tuple<Tensor, Tensor, Tensor> batch_backward(
    const Tensor& grad_out, const Tensor& input,
    const OptionalTensor& weight_opt, const OptionalTensor& mean_opt,
    const OptionalTensor& var_opt, const OptionalTensor& save_mean_opt,
    const OptionalTensor& save_invstd_opt, bool training, double eps,
    std::array<bool, 3> output_mask) {
  const Tensor& weight = value_or_undefined(weight_opt);
  const Tensor& running_mean = value_or_undefined(mean_opt);
  const Tensor& running_var = value_or_undefined(var_opt);
  const Tensor& save_mean = value_or_undefined(save_mean_opt);
  const Tensor& save_invstd = value_or_undefined(save_invstd_opt);
  const bool have_stats = training
                              ? save_mean.defined() && save_invstd.defined()
                              : running_mean.defined() && running_var.defined();
  if (!batch_supported(input, {&weight, &running_mean, &running_var, &save_mean,
                               &save_invstd}) ||
      grad_out.scalar_type() != input.scalar_type() || !have_stats ||
      input.numel() == 0) {
    torch::jit::Stack stack{
        grad_out,
        input,
        weight_opt,
        mean_opt,
        var_opt,
        save_mean_opt,
        save_invstd_opt,
        training,
        eps,
        c10::List<bool>({output_mask[0], output_mask[1], output_mask[2]})};
    fall_back(*batch_backward_op, stack);
    return {stack[0].toTensor(), stack[1].toTensor(), stack[2].toTensor()};
  }
  c10::DeviceGuard guard(input.device());
  const int64_t channels = input.size(1);
  const Tensor x = as_ncl(input);
  Tensor grad_input, grad_weight, grad_bias;
  BatchNormBackwardCall call;
  if (output_mask[0]) {
    grad_input = at::empty(input.sizes(), x.options());
    call.grad_input = view_of(grad_input.view(x.sizes()));
  }
  if (output_mask[1]) {
    grad_weight = at::empty({channels}, x.options());
    call.grad_weight = view_of(grad_weight);
  }
  if (output_mask[2]) {
    grad_bias = at::empty({channels}, x.options());
    call.grad_bias = view_of(grad_bias);
  }
  // Kept: a non-contiguous grad_out (sum()'s expanded ones) is copied, and
  // the copy must outlive the kernel's own workspace allocations.
  KeptTensors kept;
  call.grad_out = kept.view(as_ncl(grad_out));
  call.input = view_of(x);
  call.weight = view_or_absent(weight);
  call.running_mean = view_or_absent(running_mean);
  call.running_var = view_or_absent(running_var);
  call.save_mean = view_or_absent(training ? save_mean : Tensor());
  call.save_invstd = view_or_absent(training ? save_invstd : Tensor());
  call.training = training;
  call.eps = eps;
  TORCH_CHECK(kernel_ran(batch_norm_backward_kernel()(
                  kernel_context(input.device()), call)),
              "the device's batch_norm backward kernel declined dtype ",
              input.scalar_type());
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

std::vector<std::string> register_norm_kernels(torch::Library& aten) {
  std::vector<std::string> registered;
  if (layer_norm_kernel() != nullptr) {
    layer_forward_op = find_op("native_layer_norm");
    layer_backward_op = find_op("native_layer_norm_backward");
    register_kernel(aten, "native_layer_norm", TORCH_FN(layer_forward));
    register_kernel(aten, "native_layer_norm_backward",
                    TORCH_FN(layer_backward));
    registered.insert(registered.end(),
                      {"native_layer_norm", "native_layer_norm_backward"});
  }
  if (batch_norm_kernel() != nullptr) {
    batch_forward_op = find_op("native_batch_norm");
    batch_backward_op = find_op("native_batch_norm_backward");
    register_kernel(aten, "native_batch_norm", TORCH_FN(batch_forward));
    register_kernel(aten, "native_batch_norm_backward",
                    TORCH_FN(batch_backward));
    registered.insert(registered.end(),
                      {"native_batch_norm", "native_batch_norm_backward"});
  }
  return registered;
}

}  // namespace torch_backend
