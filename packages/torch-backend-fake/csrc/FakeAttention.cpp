// Fake's fused attention kernels (DeviceKernels.h, AttentionCall): computed on
// the host on the stream's worker thread, in float32 whatever the inputs'
// dtype, from the logsumexp the forward keeps (as flash attention's backward
// does), so the path PyTorch's SDPA dispatch takes for a backend's own fused
// attention is exercised end to end.
#include <ATen/TensorOperators.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/logsumexp.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>

#include <functional>
#include <limits>

#include <torch_backend/DeviceKernels.h>

#include "FakeHardware.h"
#include "HostTensor.h"

namespace {

using fake::host_tensor;
using torch_backend::TensorView;

at::Tensor as_float(const TensorView& view) {
  return host_tensor(view).to(at::kFloat);
}

// q @ k^T * scale, plus the bias and the causal mask.
at::Tensor scores_of(const at::Tensor& query, const at::Tensor& key,
                     const TensorView& bias, double scale, bool is_causal) {
  at::Tensor scores = at::matmul(query, key.transpose(-2, -1)).mul_(scale);
  if (bias.data != nullptr) {
    scores.add_(as_float(bias));
  }
  if (is_causal) {
    const at::Tensor visible =
        at::ones({query.size(-2), key.size(-2)}, at::kBool).tril();
    scores.masked_fill_(visible.logical_not(),
                        -std::numeric_limits<float>::infinity());
  }
  return scores;
}

}  // namespace

torch_backend::Status fake_attention(const torch_backend::KernelContext& ctx,
                                     const torch_backend::AttentionCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    const at::Tensor scores =
        scores_of(as_float(call.query), as_float(call.key), call.bias,
                  call.scale, call.is_causal);
    const at::Tensor logsumexp = at::logsumexp(scores, -1);
    const at::Tensor probabilities = at::exp(scores - logsumexp.unsqueeze(-1));
    host_tensor(call.out).copy_(
        at::matmul(probabilities, as_float(call.value)));
    host_tensor(call.logsumexp).copy_(logsumexp);
  });
  return torch_backend::kSuccess;
}

torch_backend::Status fake_attention_backward(
    const torch_backend::KernelContext& ctx,
    const torch_backend::AttentionBackwardCall& call) {
  fake::enqueue_kernel(ctx.stream, [call] {
    const at::Tensor query = as_float(call.query);
    const at::Tensor key = as_float(call.key);
    const at::Tensor grad_out = as_float(call.grad_out);
    // The forward's logsumexp shifts the scores; dividing by each row's sum
    // then removes its rounding (float32 at the scale of the largest score),
    // which would otherwise scale every gradient of the row by as much (the
    // CPU's math path differentiates its softmax, normalised the same way).
    at::Tensor probabilities =
        at::exp(scores_of(query, key, call.bias, call.scale, call.is_causal) -
                as_float(call.logsumexp).unsqueeze(-1));
    probabilities.div_(probabilities.sum(-1, /*keepdim=*/true));
    // d(softmax): p * (dp - sum(p * dp)) per row. Flash attention's kernels
    // take the row sum as sum(dout * out), equal in exact arithmetic, to
    // avoid keeping p; fake has p, and this form cancels exactly where a row
    // sees one key (a causal row 0), where the other leaves rounding noise
    // of dp's size in a gradient that is zero.
    const at::Tensor grad_probabilities =
        at::matmul(grad_out, as_float(call.value).transpose(-2, -1));
    const at::Tensor row_dot =
        (probabilities * grad_probabilities).sum(-1, /*keepdim=*/true);
    const at::Tensor grad_scores =
        probabilities * (grad_probabilities - row_dot) * call.scale;
    host_tensor(call.grad_query).copy_(at::matmul(grad_scores, key));
    host_tensor(call.grad_key)
        .copy_(at::matmul(grad_scores.transpose(-2, -1), query));
    host_tensor(call.grad_value)
        .copy_(at::matmul(probabilities.transpose(-2, -1), grad_out));
  });
  return torch_backend::kSuccess;
}
