// The fused LSTM and GRU cells. For any device but the CPU, ATen's RNN code
// (nn.LSTM, nn.GRU, their cells) calls _thnn_fused_lstm_cell and
// _thnn_fused_gru_cell, which only CUDA and XPU implement, and which the CPU
// fallback cannot run (there is no CPU kernel). Here they are composed of
// ordinary ATen ops, which run on the backend's device kernels where it has
// them and on the fallback otherwise. Autograd's formulas for the two ops
// call the backward ops below; the workspaces carry what they need, laid out
// as CUDA's: LSTM [i, f, g, o] (gates after activation), GRU [r, z, n, hx,
// hn] (hn: the hidden gates' n part, bias included).
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

#include "../Registration.h"

namespace torch_backend {
namespace {

using at::Tensor;
using OptionalTensor = std::optional<Tensor>;

bool given(const OptionalTensor& tensor) {
  return tensor.has_value() && tensor->defined();
}

// Input and hidden gates summed, biases included where given.
Tensor summed_gates(const Tensor& input_gates, const Tensor& hidden_gates,
                    const OptionalTensor& input_bias,
                    const OptionalTensor& hidden_bias) {
  Tensor gates = input_gates + hidden_gates;
  if (given(input_bias)) {
    gates = gates + *input_bias + *hidden_bias;
  }
  return gates;
}

void check_cell(const char* op, const Tensor& input_gates,
                const Tensor& hidden_gates, const Tensor& state,
                int64_t factor) {
  TORCH_CHECK(input_gates.dim() == 2, op, ": expected 2-D input gates, got ",
              input_gates.dim(), "-D");
  TORCH_CHECK(input_gates.sizes() == hidden_gates.sizes(), op, ": input gates ",
              input_gates.sizes(), " and hidden gates ", hidden_gates.sizes(),
              " differ in size");
  TORCH_CHECK(state.dim() == 2 && state.size(0) == input_gates.size(0) &&
                  state.size(1) * factor == input_gates.size(1),
              op, ": state of size ", state.sizes(),
              " does not match gates of size ", input_gates.sizes());
}

std::tuple<Tensor, Tensor, Tensor> lstm_cell(
    const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx,
    const OptionalTensor& input_bias, const OptionalTensor& hidden_bias) {
  check_cell("_thnn_fused_lstm_cell", input_gates, hidden_gates, cx, 4);
  const auto chunks =
      summed_gates(input_gates, hidden_gates, input_bias, hidden_bias)
          .chunk(4, 1);
  const Tensor in = at::sigmoid(chunks[0]);
  const Tensor forget = at::sigmoid(chunks[1]);
  const Tensor cell = at::tanh(chunks[2]);
  const Tensor out = at::sigmoid(chunks[3]);
  Tensor cy = forget * cx + in * cell;
  Tensor hy = out * at::tanh(cy);
  return {std::move(hy), std::move(cy), at::cat({in, forget, cell, out}, 1)};
}

// d/dx of sigmoid and tanh from their outputs.
Tensor sigmoid_slope(const Tensor& y) { return y * (1 - y); }
Tensor tanh_slope(const Tensor& y) { return 1 - y * y; }

std::tuple<Tensor, Tensor, Tensor> lstm_cell_backward(
    const OptionalTensor& grad_hy, const OptionalTensor& grad_cy,
    const Tensor& cx, const Tensor& cy, const Tensor& workspace,
    bool has_bias) {
  const auto gates = workspace.chunk(4, 1);
  const Tensor &in = gates[0], &forget = gates[1], &cell = gates[2],
               &out = gates[3];
  const Tensor tanh_cy = at::tanh(cy);
  Tensor grad_c = given(grad_cy) ? *grad_cy : at::zeros_like(cy);
  Tensor grad_out = at::zeros_like(out);
  if (given(grad_hy)) {
    grad_c = grad_c + *grad_hy * out * tanh_slope(tanh_cy);
    grad_out = *grad_hy * tanh_cy * sigmoid_slope(out);
  }
  Tensor grad_gates = at::cat(
      {grad_c * cell * sigmoid_slope(in), grad_c * cx * sigmoid_slope(forget),
       grad_c * in * tanh_slope(cell), grad_out},
      1);
  Tensor grad_bias = has_bias ? grad_gates.sum(0) : Tensor();
  return {std::move(grad_gates), grad_c * forget, std::move(grad_bias)};
}

std::tuple<Tensor, Tensor> gru_cell(const Tensor& input_gates,
                                    const Tensor& hidden_gates,
                                    const Tensor& hx,
                                    const OptionalTensor& input_bias,
                                    const OptionalTensor& hidden_bias) {
  check_cell("_thnn_fused_gru_cell", input_gates, hidden_gates, hx, 3);
  const bool biased = given(input_bias);
  const auto in_chunks =
      (biased ? input_gates + *input_bias : input_gates).chunk(3, 1);
  const auto hidden_chunks =
      (biased ? hidden_gates + *hidden_bias : hidden_gates).chunk(3, 1);
  const Tensor reset = at::sigmoid(in_chunks[0] + hidden_chunks[0]);
  const Tensor update = at::sigmoid(in_chunks[1] + hidden_chunks[1]);
  const Tensor& hidden_new = hidden_chunks[2];
  const Tensor candidate = at::tanh(in_chunks[2] + reset * hidden_new);
  Tensor hy = candidate + update * (hx - candidate);
  return {std::move(hy),
          at::cat({reset, update, candidate, hx, hidden_new}, 1)};
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> gru_cell_backward(
    const Tensor& grad_hy, const Tensor& workspace, bool has_bias) {
  const auto parts = workspace.chunk(5, 1);
  const Tensor &reset = parts[0], &update = parts[1], &candidate = parts[2],
               &hx = parts[3], &hidden_new = parts[4];
  const Tensor grad_candidate = grad_hy * (1 - update) * tanh_slope(candidate);
  const Tensor grad_reset = grad_candidate * hidden_new * sigmoid_slope(reset);
  const Tensor grad_update = grad_hy * (hx - candidate) * sigmoid_slope(update);
  Tensor grad_input_gates =
      at::cat({grad_reset, grad_update, grad_candidate}, 1);
  Tensor grad_hidden_gates =
      at::cat({grad_reset, grad_update, grad_candidate * reset}, 1);
  Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : Tensor();
  Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : Tensor();
  return {std::move(grad_input_gates), std::move(grad_hidden_gates),
          grad_hy * update, std::move(grad_input_bias),
          std::move(grad_hidden_bias)};
}

}  // namespace

void register_rnn_cells(torch::Library& aten) {
  const auto add = [&](const char* name, auto fn) {
    const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
    if (!op.hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) {
      aten.impl(name, fn);  // unless the backend brought its own
    }
  };
  add("aten::_thnn_fused_lstm_cell", TORCH_FN(lstm_cell));
  add("aten::_thnn_fused_lstm_cell_backward_impl",
      TORCH_FN(lstm_cell_backward));
  add("aten::_thnn_fused_gru_cell", TORCH_FN(gru_cell));
  add("aten::_thnn_fused_gru_cell_backward", TORCH_FN(gru_cell_backward));
}

}  // namespace torch_backend
