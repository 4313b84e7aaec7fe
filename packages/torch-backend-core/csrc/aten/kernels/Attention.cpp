// F.scaled_dot_product_attention over a backend's fused attention kernels.
// PyTorch asks each device type which SDPA implementation to use (the
// _fused_sdp_choice DispatchStub); for PrivateUse1 the answer "overrideable"
// routes the call to _scaled_dot_product_fused_attention_overrideable and,
// through autograd's formula, its backward. Core answers "overrideable" for
// the calls the kernel interface covers (AttentionCall) and "math" (PyTorch's
// composite of matmul and softmax) for the rest: dropout, grouped-query
// heads, a mask that needs a gradient, other dtypes or ranks. A backend with
// no attention, matmul or softmax kernel computes the math path's every op on
// the CPU through the fallback anyway: for it core answers as the CPU does,
// so SDPA runs as the CPU's fused kernel, one fallback call that returns the
// CPU's results, instead of a dozen calls that round differently.
#include <ATen/Context.h>
#include <ATen/SDPBackend.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_fused_sdp_choice_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/GradMode.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <optional>
#include <tuple>
#include <vector>

#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"

namespace torch_backend {
namespace {

using at::Tensor;
using OptionalTensor = std::optional<Tensor>;

bool attention_dtype(at::ScalarType type) {
  return type == at::kFloat || type == at::kHalf || type == at::kBFloat16;
}

bool covered_by_kernels(const Tensor& query, const Tensor& key,
                        const Tensor& value, const OptionalTensor& mask,
                        double dropout_p, bool is_causal) {
  if (attention_kernel() == nullptr || dropout_p != 0.0 || query.is_nested() ||
      query.dim() != 4 || key.dim() != 4 || value.dim() != 4 ||
      !attention_dtype(query.scalar_type()) ||
      key.scalar_type() != query.scalar_type() ||
      value.scalar_type() != query.scalar_type()) {
    return false;
  }
  // Same batch and heads everywhere (no grouped-query broadcasting), keys and
  // values of one length, queries and keys of one width.
  if (key.size(0) != query.size(0) || value.size(0) != query.size(0) ||
      key.size(1) != query.size(1) || value.size(1) != query.size(1) ||
      key.size(2) != value.size(2) || key.size(3) != query.size(3)) {
    return false;
  }
  if (mask.has_value() && mask->defined()) {
    const Tensor& m = *mask;
    if (is_causal || (c10::GradMode::is_enabled() && m.requires_grad()) ||
        (m.scalar_type() != at::kBool &&
         m.scalar_type() != query.scalar_type()) ||
        m.dim() > 4) {
      return false;
    }
  }
  return true;
}

// Whether the math path's matmuls and softmax would all run on the fallback.
bool math_path_on_fallback() {
  return attention_kernel() == nullptr && gemm_kernel() == nullptr &&
         softmax_kernel("softmax") == nullptr;
}

int64_t choose_sdpa(const Tensor& query, const Tensor& key, const Tensor& value,
                    const OptionalTensor& mask, double dropout_p,
                    bool is_causal, std::optional<double> scale,
                    bool enable_gqa) {
  if (math_path_on_fallback()) {
    // The CPU's own rules (flash or math; sdpa_kernel's and
    // torch.backends' switches included) read only shapes, dtypes and
    // strides, so they answer for these tensors as for their CPU copies.
    return at::native::_fused_sdp_choice_cpp(query, key, value, mask, dropout_p,
                                             is_causal, scale, enable_gqa);
  }
  // torch.nn.attention.sdpa_kernel (and torch.backends.cuda's switches)
  // restrict the choice, as on CUDA: an enabled kernel that takes the call,
  // else an error naming why.
  const at::Context& context = at::globalContext();
  if (context.userEnabledOverrideableSDP() &&
      covered_by_kernels(query, key, value, mask, dropout_p, is_causal)) {
    return static_cast<int64_t>(at::SDPBackend::overrideable);
  }
  TORCH_CHECK(context.userEnabledMathSDP(), "scaled_dot_product_attention on ",
              query.device(),
              ": no enabled implementation takes this call (the math path is "
              "disabled, and the backend's fused attention kernel is ",
              context.userEnabledOverrideableSDP()
                  ? "missing or does not take this call: dropout, "
                    "grouped-query heads, dtype, rank or mask"
                  : "disabled",
              ")");
  return static_cast<int64_t>(at::SDPBackend::math);
}

double scale_for(const Tensor& query, std::optional<double> scale) {
  return scale.has_value()
             ? *scale
             : 1.0 / std::sqrt(static_cast<double>(query.size(3)));
}

// The additive bias as (B, H, L, S), broadcast with stride 0; absent if none.
TensorView bias_view(const Tensor& bias, const Tensor& query,
                     const Tensor& key) {
  if (!bias.defined()) {
    return TensorView{};
  }
  return view_of(
      bias.expand({query.size(0), query.size(1), query.size(2), key.size(2)}));
}

void check_kernel_ran(Status status) {
  TORCH_CHECK(kernel_ran(status),
              "the backend's attention kernel declined a call (attention "
              "kernels take every call core sends them)");
}

using ForwardResult = std::tuple<Tensor, Tensor, Tensor, Tensor, c10::SymInt,
                                 c10::SymInt, Tensor, Tensor, Tensor>;

// The output in query's dimension order, as PyTorch's meta function for the
// overrideable op allocates it (compiled graphs check the strides).
Tensor empty_in_layout_of(const Tensor& query, c10::IntArrayRef sizes) {
  if (query.sizes() == sizes) {
    return at::empty_like(query);
  }
  std::vector<int64_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return query.stride(a) > query.stride(b);
  });
  std::vector<int64_t> strides(sizes.size());
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = stride;
    stride *= sizes[*it];
  }
  return at::empty_strided(sizes, strides, query.options());
}

ForwardResult forward(const Tensor& query, const Tensor& key,
                      const Tensor& value, const OptionalTensor& bias,
                      double dropout_p, bool is_causal,
                      bool /*return_debug_mask*/, std::optional<double> scale) {
  TORCH_CHECK(covered_by_kernels(query, key, value, bias, dropout_p, is_causal),
              "_scaled_dot_product_fused_attention_overrideable: this call "
              "(dropout, grouped-query heads, dtype ",
              query.scalar_type(), " or rank ", query.dim(),
              ") is not one the backend's attention kernel takes; "
              "F.scaled_dot_product_attention sends it to the math path");
  c10::DeviceGuard guard(query.device());
  const int64_t batch = query.size(0), heads = query.size(1),
                length = query.size(2), keys = key.size(2);
  Tensor out = empty_in_layout_of(query, {batch, heads, length, value.size(3)});
  Tensor logsumexp =
      at::empty({batch, heads, length}, query.options().dtype(at::kFloat));
  const Tensor bias_tensor = bias.has_value() ? *bias : Tensor();
  AttentionCall call;
  call.out = view_of(out);
  call.logsumexp = view_of(logsumexp);
  call.query = view_of(query);
  call.key = view_of(key);
  call.value = view_of(value);
  call.bias = bias_view(bias_tensor, query, key);
  call.scale = scale_for(query, scale);
  call.is_causal = is_causal;
  if (out.numel() > 0) {
    check_kernel_ran(attention_kernel()(kernel_context(query.device()), call));
  }
  // As PyTorch's meta function: no cumulative sequence lengths or debug
  // mask, scalar RNG seed and offset (no dropout here).
  const auto scalar = [&] {
    return at::empty({}, query.options().dtype(at::kLong));
  };
  return {std::move(out),
          std::move(logsumexp),
          Tensor(),
          Tensor(),
          c10::SymInt(length),
          c10::SymInt(keys),
          scalar(),
          scalar(),
          Tensor()};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key,
    const Tensor& value, const Tensor& bias,
    std::array<bool, 4> grad_input_mask, const Tensor& out,
    const Tensor& logsumexp, const Tensor& /*cum_seq_q*/,
    const Tensor& /*cum_seq_k*/, c10::SymInt /*max_q*/, c10::SymInt /*max_k*/,
    double /*dropout_p*/, bool is_causal, const Tensor& /*philox_seed*/,
    const Tensor& /*philox_offset*/, std::optional<double> scale) {
  c10::DeviceGuard guard(query.device());
  // Laid out as the inputs, as PyTorch's meta function has them.
  Tensor grad_query = at::empty_like(query);
  Tensor grad_key = at::empty_like(key);
  Tensor grad_value = at::empty_like(value);
  AttentionBackwardCall call;
  call.grad_query = view_of(grad_query);
  call.grad_key = view_of(grad_key);
  call.grad_value = view_of(grad_value);
  call.grad_out = view_of(grad_out);
  call.query = view_of(query);
  call.key = view_of(key);
  call.value = view_of(value);
  call.bias = bias_view(bias, query, key);
  call.out = view_of(out);
  call.logsumexp = view_of(logsumexp);
  call.scale = scale_for(query, scale);
  call.is_causal = is_causal;
  if (query.numel() > 0 && key.numel() > 0) {
    check_kernel_ran(
        attention_backward_kernel()(kernel_context(query.device()), call));
  } else {
    grad_query.zero_();
    grad_key.zero_();
    grad_value.zero_();
  }
  const auto wanted = [&](Tensor grad, int index) {
    return grad_input_mask[index] ? std::move(grad) : Tensor();
  };
  return {wanted(std::move(grad_query), 0), wanted(std::move(grad_key), 1),
          wanted(std::move(grad_value), 2), Tensor()};
}

// Shapes of the backward's results, for compiled graphs (FakeTensor), where
// PyTorch has no meta function for it (2.11): laid out as the inputs, as
// later releases' meta function has them.
std::tuple<Tensor, Tensor, Tensor, Tensor> backward_meta(
    const Tensor& /*grad_out*/, const Tensor& query, const Tensor& key,
    const Tensor& value, const Tensor& bias,
    std::array<bool, 4> /*grad_input_mask*/, const Tensor& /*out*/,
    const Tensor& /*logsumexp*/, const Tensor& /*cum_seq_q*/,
    const Tensor& /*cum_seq_k*/, c10::SymInt /*max_q*/, c10::SymInt /*max_k*/,
    double /*dropout_p*/, bool /*is_causal*/, const Tensor& /*philox_seed*/,
    const Tensor& /*philox_offset*/, std::optional<double> /*scale*/) {
  return {at::empty_like(query), at::empty_like(key), at::empty_like(value),
          bias.defined() ? at::empty_like(bias) : Tensor()};
}

void register_backward_meta_if_missing() {
  const char* name =
      "aten::_scaled_dot_product_fused_attention_overrideable_backward";
  const auto op = c10::Dispatcher::singleton().findOp({name, ""});
  if (op && op->hasKernelForDispatchKey(c10::DispatchKey::Meta)) {
    return;
  }
  static auto* meta = new torch::Library(torch::Library::IMPL, "aten",
                                         c10::DispatchKey::Meta, __FILE__,
                                         __LINE__);  // leaked, like core's own
  meta->impl("_scaled_dot_product_fused_attention_overrideable_backward",
             TORCH_FN(backward_meta));
}

}  // namespace

std::vector<std::string> register_attention_kernels(torch::Library& aten) {
  // Always: torch._fused_sdp_choice answers for the device as SDPA does
  // (otherwise the CPU fallback would report the CPU's choice).
  register_kernel(aten, "_fused_sdp_choice", TORCH_FN(choose_sdpa));
  std::vector<std::string> registered{"_fused_sdp_choice"};
  // SDPA itself asks the stub (math for a device without one).
  at::native::_fused_sdp_choice_stub.set_privateuse1_dispatch_ptr(&choose_sdpa);
  if (attention_kernel() == nullptr) {
    return registered;
  }
  register_kernel(aten, "_scaled_dot_product_fused_attention_overrideable",
                  TORCH_FN(forward));
  register_kernel(aten,
                  "_scaled_dot_product_fused_attention_overrideable_backward",
                  TORCH_FN(backward));
  register_backward_meta_if_missing();
  registered.insert(registered.end(),
                    {"_scaled_dot_product_fused_attention_overrideable",
                     "_scaled_dot_product_fused_attention_overrideable_"
                     "backward"});
  return registered;
}

}  // namespace torch_backend
