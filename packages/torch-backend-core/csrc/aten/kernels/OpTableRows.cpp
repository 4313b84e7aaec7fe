// The op table as rows, for `python -m torch_backend ops` and the op report:
// each op with its family, kernel name, and whether the active backend's
// kernel serves it (KernelTable) or TORCH_BACKEND_FORCE_FALLBACK keeps it on
// the fallback. Only strings: no meta headers here.
#include <algorithm>
#include <limits>

#include "../bringup/ForcedFallback.h"
#include "KernelTable.h"
#include "OpTable.h"

namespace torch_backend {
namespace {

void add_rows(std::vector<OpTableRow>& rows, const char* family,
              const std::string& kernel, bool on_device,
              std::initializer_list<const char*> ops) {
  for (const char* op : ops) {
    if (op != nullptr) {
      const bool forced = on_device && forced_to_fallback(op);
      rows.push_back({op, family, kernel, on_device && !forced, forced});
    }
  }
}

}  // namespace

std::vector<OpTableRow> op_table() {
  std::vector<OpTableRow> rows;
#define TORCH_BACKEND_ELEMENTWISE_ROWS(id, kernel, Meta, functional, out, \
                                       inplace, rule)                     \
  add_rows(rows, "elementwise", #kernel,                                  \
           elementwise_kernel(#kernel) != nullptr,                        \
           {functional, out, inplace});
  TORCH_BACKEND_ELEMENTWISE_OPS(TORCH_BACKEND_ELEMENTWISE_ROWS)
#undef TORCH_BACKEND_ELEMENTWISE_ROWS
  add_rows(rows, "elementwise", "fill", elementwise_kernel("fill") != nullptr,
           {"zero_"});
  add_rows(rows, "elementwise", "copy", elementwise_kernel("copy") != nullptr,
           {"_copy_from", "cat", "cat.out"});
  add_rows(rows, "elementwise", "arange",
           elementwise_kernel("arange") != nullptr, {"arange.start_out"});
  for (const auto& [overload, kernel] : foreach_ops()) {
    add_rows(rows, "multi_tensor", kernel,
             multi_tensor_kernel(kernel) != nullptr, {overload.c_str()});
  }
#define TORCH_BACKEND_REDUCTION_ROWS(id, Meta, functional, out, empty) \
  add_rows(rows, "reduction", #id, reduction_kernel(#id) != nullptr,   \
           {functional, out});
  TORCH_BACKEND_REDUCTION_OPS(TORCH_BACKEND_REDUCTION_ROWS)
#undef TORCH_BACKEND_REDUCTION_ROWS
#define TORCH_BACKEND_GEMM_ROWS(id, Meta, Operands, functional, out, inplace) \
  add_rows(rows, "gemm", "gemm", gemm_kernel() != nullptr,                    \
           {functional, out, inplace});
  TORCH_BACKEND_GEMM_OPS(TORCH_BACKEND_GEMM_ROWS)
#undef TORCH_BACKEND_GEMM_ROWS
#define TORCH_BACKEND_SOFTMAX_ROWS(kernel, Meta, functional, out, BackMeta, \
                                   back_functional, back_out)               \
  add_rows(rows, "softmax", #kernel, softmax_kernel(#kernel) != nullptr,    \
           {functional, out, back_functional, back_out});
  TORCH_BACKEND_SOFTMAX_OPS(TORCH_BACKEND_SOFTMAX_ROWS)
#undef TORCH_BACKEND_SOFTMAX_ROWS
  add_rows(rows, "loss", "nll_loss", nll_loss_kernel() != nullptr,
           {"nll_loss_forward", "nll_loss_forward.output", "nll_loss_backward",
            "nll_loss_backward.grad_input"});
  add_rows(rows, "indexing", "index_select",
           index_kernel("index_select") != nullptr,
           {"index_select", "index_select.out"});
  add_rows(
      rows, "indexing", "index_add", index_kernel("index_add") != nullptr,
      {"index_add", "index_add.out", "index_add_", "embedding_dense_backward"});
  add_rows(rows, "indexing", "gather", index_kernel("gather") != nullptr,
           {"gather", "gather.out"});
  add_rows(rows, "indexing", "scatter_add",
           index_kernel("scatter_add") != nullptr,
           {"scatter_add", "scatter_add.out", "scatter_add_"});
  add_rows(rows, "reduction", "max", arg_reduction_kernel("max") != nullptr,
           {"max.dim", "max.dim_max", "argmax", "argmax.out"});
  add_rows(rows, "reduction", "min", arg_reduction_kernel("min") != nullptr,
           {"min.dim", "min.dim_min", "argmin", "argmin.out"});
  add_rows(rows, "reduction", "variance", variance_kernel() != nullptr,
           {"var.correction", "var.correction_out", "var_mean.correction",
            "std.correction", "std.correction_out", "std_mean.correction"});
  add_rows(rows, "norm", "layer_norm", layer_norm_kernel() != nullptr,
           {"native_layer_norm", "native_layer_norm_backward"});
  add_rows(rows, "norm", "batch_norm", batch_norm_kernel() != nullptr,
           {"native_batch_norm", "native_batch_norm_backward"});
  add_rows(rows, "random", "dropout", dropout_kernel() != nullptr,
           {"native_dropout", "native_dropout_backward"});
  add_rows(rows, "convolution", "convolution", convolution_kernel() != nullptr,
           {"convolution", "convolution_backward"});
  add_rows(rows, "pooling", "max_pool2d", pool_kernel("max_pool2d") != nullptr,
           {"max_pool2d_with_indices", "max_pool2d_with_indices_backward"});
  add_rows(rows, "pooling", "avg_pool2d", pool_kernel("avg_pool2d") != nullptr,
           {"avg_pool2d", "avg_pool2d_backward"});
  add_rows(rows, "pooling", "adaptive_avg_pool2d",
           pool_kernel("adaptive_avg_pool2d") != nullptr,
           {"_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward"});
  add_rows(rows, "attention", "attention", attention_kernel() != nullptr,
           {"_scaled_dot_product_fused_attention_overrideable",
            "_scaled_dot_product_fused_attention_overrideable_backward"});
  add_rows(rows, "composite", "softmax+amax+eq+masked_fill",
           safe_softmax_composable(), {"_safe_softmax"});
  add_rows(rows, "composite", "sub+mul+mean/sum", mse_loss_composable(),
           {"mse_loss", "mse_loss_backward"});
  add_rows(rows, "composite", "arange+sub+gt/lt+masked_fill",
           triangle_composable(), {"tril", "triu", "tril_", "triu_"});
  return rows;
}

}  // namespace torch_backend
