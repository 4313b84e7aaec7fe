// The device-kernel interface: compute a backend runs on its own hardware.
//
// Like DeviceRuntime.h, this header is free of torch headers. A backend
// implements kernels over plain tensor descriptors; core does the generic
// work with ATen's own machinery (the structured-kernel meta functions and
// TensorIterator: type promotion, broadcasting, output allocation, out= and
// in-place variants, resizing, dimension coalescing, device checks) and
// registers an ATen kernel for every op whose kernel the backend provides.
// Every other op stays on core's CPU fallback.
//
// In the backend's kernel file (KERNEL_SOURCES in CMake):
//   TORCH_BACKEND_DEFINE_DEVICE_KERNELS(kernels) {
//     kernels.elementwise("add", &my_add);   // one function plus one line
//   }
// Core calls it once at activation. Kernel names are the families' op names
// listed in core's op table (`python -m torch_backend ops` shows them).
#pragma once

#include <cstddef>
#include <cstdint>

#include <torch_backend/DType.h>
#include <torch_backend/DeviceRuntime.h>

namespace torch_backend {

// Bumped whenever a descriptor layout or kernel signature changes.
constexpr int kDeviceKernelsAbiVersion = 10;

constexpr int kMaxKernelDims = 25;  // TensorIterator's limit

// A strided view of device memory. Element (i0, i1, ...) lives at
// data + (offset + sum(i_k * strides[k])) * element_size(dtype).
struct TensorView {
  void* data = nullptr;     // device pointer (the allocation, or any base)
  std::int64_t offset = 0;  // in elements
  DType dtype = DType::Float32;
  std::int32_t dim = 0;  // 0: a single element
  std::int64_t sizes[kMaxKernelDims] = {};
  std::int64_t strides[kMaxKernelDims] = {};  // in elements; 0 broadcasts

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (std::int32_t d = 0; d < dim; ++d) {
      n *= sizes[d];
    }
    return n;
  }
};

// A host-side scalar argument (alpha of add, value of fill_, min of clamp),
// converted to the op's compute type.
struct ScalarValue {
  double as_double = 0;
  std::int64_t as_int = 0;
  bool is_integral = false;
  bool is_none = false;  // an optional argument left out (clamp's max)
};

// Where a kernel runs: the current device and stream core hands it. A kernel
// enqueues its work on `stream` and returns; core orders everything else.
struct KernelContext {
  StreamHandle stream = nullptr;
  int device = 0;
};

// ---- Element-wise family ---------------------------------------------------
// out = op(inputs..., scalars...). All views have the same sizes (broadcast
// inputs have stride 0), already coalesced by TensorIterator. Inputs arrive
// in the op's compute dtype (core casts others first), out in its result
// dtype: the compute dtype, Bool for comparisons. where's condition is Bool.
// scalars: the op's non-tensor arguments in schema order (add: alpha; clamp:
// min, max, possibly is_none). A string argument selects the kernel: gelu
// with approximate='tanh' runs kernel "gelu_tanh". Return kNotSupported to
// decline a call (a dtype): core then runs it on the fallback.
//
// An input may be a host scalar instead of memory: a Python number or a 0-dim
// CPU tensor operand (`x * 2`, `x > 0`), which core passes by value, as
// CUDA's kernels take them, instead of filling a device tensor and launching
// a second kernel. Then scalar_inputs[i] is set, inputs[i] has out's sizes,
// all strides 0 and data nullptr (never read it), and input_values[i] holds
// the value (as_double for floating dtypes, as_int for integral ones and
// Bool): for arithmetic in the compute dtype's math type, as CUDA's kernels
// read it (float16 and bfloat16: the number rounded to float, not to the
// dtype, so `half_x * 0.1` computes in float and rounds once); for
// comparisons and where() converted to the compute dtype. A kernel that cannot
// take one (aclnn has no scalar form of an op) returns kNotSupported when
// has_scalar_input(): core then fills device tensors with the values and calls
// it again.
constexpr int kMaxElementwiseInputs = 3;
constexpr int kMaxElementwiseScalars = 2;

struct ElementwiseCall {
  TensorView out;
  TensorView inputs[kMaxElementwiseInputs];
  std::int32_t num_inputs = 0;
  ScalarValue scalars[kMaxElementwiseScalars];
  std::int32_t num_scalars = 0;
  bool scalar_inputs[kMaxElementwiseInputs] = {};
  ScalarValue input_values[kMaxElementwiseInputs];

  bool has_scalar_input() const {
    for (std::int32_t i = 0; i < num_inputs; ++i) {
      if (scalar_inputs[i]) {
        return true;
      }
    }
    return false;
  }
};

using ElementwiseKernel = Status (*)(const KernelContext& ctx,
                                     const ElementwiseCall& call);

// ---- Multi-tensor form of an element-wise kernel (optional) ---------------
// ATen's _foreach_* ops, the optimizers' hot path over many small tensors, in
// one call per list where a kernel per tensor would be launched (CUDA's
// multi_tensor_apply): calls[t] is tensor t's call of the element-wise kernel
// of the same name, as that kernel takes it, every view one dense dimension
// (out[i] = op(inputs[k][i]..., scalars...) for i < numel). Core sends only
// lists ATen's fast route accepts: one dtype and device, tensors dense and
// not overlapping, matching sizes and strides across the lists; count >= 1
// and no empty tensor. Return kNotSupported, enqueuing nothing, to decline a
// list: core then runs the op tensor by tensor (the element-wise kernel).
// Kernels: "add", "sub", "mul", "div", "addcmul", "addcdiv", "lerp_scalar",
// "sqrt".
using MultiTensorKernel = Status (*)(const KernelContext& ctx,
                                     const ElementwiseCall* calls,
                                     std::int32_t count);

// ---- Reduction family ------------------------------------------------------
// out and in have the same sizes; out has stride 0 along the reduced
// dimensions, so out[j] combines every in[i] that maps to it. Both arrive in
// the result dtype (sum of int32 is int64: core casts first). Kernels: "sum",
// "mean" (divides by the number of elements folded into each output),
// "amax", "amin". An empty reduction (a 0 size) never reaches the kernel.
using ReductionKernel = Status (*)(const KernelContext& ctx,
                                   const TensorView& out, const TensorView& in);

// ---- Variance ---------------------------------------------------------------
// var (or its square root, the standard deviation, when `standard_deviation`)
// and mean of in over the reduced dims: var and mean have in's sizes with
// stride 0 along them, as a reduction's out. var = sum((in - mean)^2) /
// (N - correction) over the N elements folded into each output; core
// guarantees N - correction > 0. mean.data == nullptr when only var is asked
// (var, std); all three share in's floating dtype.
struct VarianceCall {
  TensorView var, mean, in;
  double correction = 1;
  bool standard_deviation = false;
};
using VarianceKernel = Status (*)(const KernelContext& ctx,
                                  const VarianceCall& call);

// ---- Matrix multiply ------------------------------------------------------
// out[i] = alpha * (a[i] @ b[i]) + beta * c[i] for every batch i: 3-D
// views (batch, rows, columns) with any strides (a transpose is a stride
// swap; a broadcast has stride 0). c (addmm's self, expanded) is set and
// read only when beta != 0; it may be out itself (addmm_). All share one
// floating dtype: Float32, BFloat16 or Float16 (accumulate in float), or
// Float64.
// allow_reduced_precision: the user allowed float32 products with a faster,
// less precise internal format (torch.backends.cuda.matmul.allow_tf32 or
// torch.set_float32_matmul_precision("high"), as CUDA honours them; off by
// default); other dtypes ignore it.
struct GemmCall {
  TensorView out, a, b, c;
  double alpha = 1;
  double beta = 0;
  bool allow_reduced_precision = false;
};

using GemmKernel = Status (*)(const KernelContext& ctx, const GemmCall& call);

// ---- Along one dimension --------------------------------------------------
// softmax / log_softmax: out = f(in) along `dim`, both of one floating dtype
// (core casts half_to_float inputs first). Full views, not coalesced.
using SoftmaxKernel = Status (*)(const KernelContext& ctx,
                                 const TensorView& out, const TensorView& in,
                                 std::int32_t dim);
// softmax_backward / log_softmax_backward: grad_input from grad_output and
// the forward's output, along `dim`, all of one floating dtype.
using SoftmaxBackwardKernel = Status (*)(const KernelContext& ctx,
                                         const TensorView& grad_input,
                                         const TensorView& grad_output,
                                         const TensorView& output,
                                         std::int32_t dim);

// ---- Losses ---------------------------------------------------------------
enum class Reduction : std::int8_t { None = 0, Mean = 1, Sum = 2 };

// nll_loss over input (N, C) and target (N) of Int64 (core views a single
// sample as N = 1), optional class weight (C) (data == nullptr: none), all
// but target of one floating dtype. out: (N) for Reduction::None, else
// 0-dim; total_weight: 0-dim, the summed weight of the counted targets. A
// target equal to ignore_index counts nothing; core has checked that every
// other target lies in [0, C) (IndexError otherwise, as on the CPU), except
// while a graph is captured: the host cannot read targets or indices then,
// so a kernel taking them (nll_loss, gather, scatter, index) must fail the
// stream on a bad one rather than access memory out of range (what CUDA's
// device-side asserts do).
struct NllLossCall {
  TensorView out, total_weight, input, target, weight;
  Reduction reduction = Reduction::Mean;
  std::int64_t ignore_index = -100;
};
using NllLossKernel = Status (*)(const KernelContext& ctx,
                                 const NllLossCall& call);

// grad_input (shaped like input, zero-filled by core) from grad_output
// ((N) for Reduction::None, else 0-dim) and the forward's total_weight.
struct NllLossBackwardCall {
  TensorView grad_input, grad_output, target, weight, total_weight;
  Reduction reduction = Reduction::Mean;
  std::int64_t ignore_index = -100;
};
using NllLossBackwardKernel = Status (*)(const KernelContext& ctx,
                                         const NllLossBackwardCall& call);

// ---- Indexing along one dimension ---------------------------------------
// index_select: out = self.index_select(dim, index): out has self's shape but
//   index's length along dim. source is unused.
// index_add: out += alpha * source scattered along dim: out[.., index[i], ..]
//   accumulates source[.., i, ..] (repeated indices add up). self is unused:
//   core has copied it into out.
//   For both, index is 1-D.
// gather: out[i][j] = self[index[i][j]][j] (for dim 0; likewise for others):
//   index has out's shape and self's rank. source is unused.
// scatter_add: out[index[i][j]][j] += source[i][j] (for dim 0) over index's
//   shape; core has copied self into out.
// index is Int64 or Int32 (PyTorch accepts both) and core has checked every
// entry lies in [0, size(dim)).
// out, self and source share one dtype; full strided views.
struct IndexCall {
  TensorView out, self, index, source;
  std::int32_t dim = 0;
  ScalarValue alpha;
};
using IndexKernel = Status (*)(const KernelContext& ctx, const IndexCall& call);

// ---- Normalisation ---------------------------------------------------------
// layer_norm over rows: input (M, N) contiguous, weight and bias (N) or
// absent (data == nullptr); out (M, N), mean and rstd (M) in the input's
// dtype (as PyTorch's CPU kernel returns them). Accumulate in float.
struct LayerNormCall {
  TensorView out, mean, rstd, input, weight, bias;
  double eps = 1e-5;
};
using LayerNormKernel = Status (*)(const KernelContext& ctx,
                                   const LayerNormCall& call);
// Backward from grad_out (M, N), the forward's input, mean and rstd, and
// weight (or absent). Each of grad_input (M, N), grad_weight (N), grad_bias
// (N) is computed only where its data is set (PyTorch's output_mask).
struct LayerNormBackwardCall {
  TensorView grad_input, grad_weight, grad_bias, grad_out, input, mean, rstd,
      weight;
};
using LayerNormBackwardKernel = Status (*)(const KernelContext& ctx,
                                           const LayerNormBackwardCall& call);

// batch_norm over input (N, C, L) (core views any (N, C, ...) input so),
// contiguous; weight, bias, running_mean, running_var (C) or absent. Training:
// normalise with the batch statistics, write save_mean and save_invstd (C),
// and update the running stats in place (momentum; the variance unbiased).
// Evaluation: normalise with the running stats; save_* are left empty
// (data == nullptr). All of one floating dtype.
struct BatchNormCall {
  TensorView out, save_mean, save_invstd, input, weight, bias, running_mean,
      running_var;
  bool training = true;
  double momentum = 0.1;
  double eps = 1e-5;
};
using BatchNormKernel = Status (*)(const KernelContext& ctx,
                                   const BatchNormCall& call);
// Backward: grad_input (N, C, L), grad_weight and grad_bias (C), each only
// where its data is set, from grad_out, the input, weight, the running stats
// and the forward's save_mean/save_invstd (absent in evaluation).
struct BatchNormBackwardCall {
  TensorView grad_input, grad_weight, grad_bias, grad_out, input, weight,
      running_mean, running_var, save_mean, save_invstd;
  bool training = true;
  double eps = 1e-5;
};
using BatchNormBackwardKernel = Status (*)(const KernelContext& ctx,
                                           const BatchNormBackwardCall& call);

// ---- Random ----------------------------------------------------------------
// dropout: mask = u < 1 - p and out = input * mask / (1 - p) (0 where p is
// 1), u uniform in [0, 1) from a counter-based generator keyed by `seed`:
// element i draws from counter `offset + i` (Philox4x32-10 is the reference:
// fake implements it). out and input share a floating dtype; mask is Bool;
// all contiguous, same numel. Core draws `seed` from the device generator,
// so results are reproducible under torch.manual_seed and get/set_rng_state.
// In a graph (stream capture), `seed_on_device` is set: the kernel reads its
// seed from that device address when it runs, not from `seed`, so each
// replay draws fresh numbers (core writes the seeds before every launch, as
// CUDA's graphs read their Philox offsets from device memory).
struct DropoutCall {
  TensorView out, mask, input;
  double p = 0.5;
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  const std::uint64_t* seed_on_device = nullptr;
};
using DropoutKernel = Status (*)(const KernelContext& ctx,
                                 const DropoutCall& call);

// ---- Reductions with indices -------------------------------------------
// max / min along `dim`: values (data == nullptr for argmax/argmin) and
// indices (Int64) have in's shape with size 1 along dim; NaN wins, and the
// first of equal extremes is taken (as PyTorch's CPU kernel does). Kernels:
// "max", "min".
using ArgReductionKernel = Status (*)(const KernelContext& ctx,
                                      const TensorView& values,
                                      const TensorView& indices,
                                      const TensorView& in, std::int32_t dim);

// ---- Attention -------------------------------------------------------------
// Fused scaled-dot-product attention, which F.scaled_dot_product_attention
// takes (PyTorch's "overrideable" SDPA backend) whenever a backend registers
// it: query (B, H, L, E), key (B, H, S, E), value (B, H, S, Ev), strided, of
// one dtype (Float32, Float16 or BFloat16). bias: additive, broadcast to
// (B, H, L, S) (stride 0 where broadcast), or absent (data == nullptr); a
// boolean mask reaches the kernel as 0 / -inf. is_causal: query i sees keys
// j <= i (top-left aligned, as PyTorch's math path). scores = q @ k^T *
// scale + bias; out (B, H, L, Ev) = softmax(scores) @ v; logsumexp (B, H, L)
// Float32 = log(sum(exp(scores))) per row, kept for the backward. Core sends
// no dropout and no grouped-query heads (those calls take PyTorch's math
// path), and a kernel takes every call it gets.
struct AttentionCall {
  TensorView out, logsumexp, query, key, value, bias;
  double scale = 1.0;
  bool is_causal = false;
};
using AttentionKernel = Status (*)(const KernelContext& ctx,
                                   const AttentionCall& call);
// Backward: grad_query, grad_key, grad_value (shaped like their inputs) from
// grad_out, the forward's inputs, out and logsumexp.
struct AttentionBackwardCall {
  TensorView grad_query, grad_key, grad_value, grad_out, query, key, value,
      bias, out, logsumexp;
  double scale = 1.0;
  bool is_causal = false;
};
using AttentionBackwardKernel = Status (*)(const KernelContext& ctx,
                                           const AttentionBackwardCall& call);

// ---- Convolution ------------------------------------------------------------
// torch.nn.functional.conv{1,2,3}d and conv_transpose{1,2,3}d (ATen's
// `convolution`): input (N, C_in, *spatial), weight (C_out, C_in / groups,
// *kernel) or, transposed, (C_in, C_out / groups, *kernel), bias (C_out) or
// absent, out (N, C_out, *out_spatial). All of one floating dtype (Float32,
// Float16, BFloat16), strided: core passes contiguous memory, or channels-last
// when the input or weight is channels-last (out then is too). Core has
// checked the shapes (the CPU's errors come from the fallback); a kernel
// returns kNotSupported to decline a case, which then runs on the fallback.
// allow_reduced_precision: float32 convolutions may use a faster, less
// precise internal format (TF32), as torch.backends.cudnn.allow_tf32 allows
// CUDA's (on by default in PyTorch); other dtypes ignore it.
struct ConvolutionParams {
  std::int32_t spatial_dims = 2;  // 1 to 3; the arrays' first entries count
  std::int64_t stride[3] = {1, 1, 1};
  std::int64_t padding[3] = {0, 0, 0};
  std::int64_t dilation[3] = {1, 1, 1};
  std::int64_t output_padding[3] = {0, 0, 0};  // transposed only
  bool transposed = false;
  std::int64_t groups = 1;
  bool allow_reduced_precision = false;
};
struct ConvolutionCall {
  TensorView out, input, weight, bias;
  ConvolutionParams params;
};
using ConvolutionKernel = Status (*)(const KernelContext& ctx,
                                     const ConvolutionCall& call);
// Backward: grad_input (input's shape and layout), grad_weight (weight's),
// grad_bias (C_out), each only where its data is set, from grad_out, input
// and weight.
struct ConvolutionBackwardCall {
  TensorView grad_input, grad_weight, grad_bias, grad_out, input, weight;
  ConvolutionParams params;
};
using ConvolutionBackwardKernel =
    Status (*)(const KernelContext& ctx, const ConvolutionBackwardCall& call);

// ---- Pooling (2-d) ----------------------------------------------------------
// Over input (N, C, H, W), contiguous or channels-last (outputs alike), of a
// floating dtype; shapes checked by core with ATen's own meta functions.
// max_pool2d: out and indices (Int64: the flat index h * W + w of each
// maximum within its (n, c) plane, NaN winning, the first of equals taken, as
// PyTorch); its backward scatters grad_out into grad_input (zeroed by the
// kernel) at those indices, adding where windows overlap. avg_pool2d: the mean
// of each window, padding counted when count_include_pad, or divided by
// divisor_override when it is nonzero. adaptive_avg_pool2d: window (i, j) of
// out (OH, OW) covers rows [floor(i * H / OH), ceil((i + 1) * H / OH)) and
// the same for columns, as PyTorch.
struct Pool2dParams {
  std::int64_t kernel[2] = {1, 1};
  std::int64_t stride[2] = {1, 1};
  std::int64_t padding[2] = {0, 0};
  std::int64_t dilation[2] = {1, 1};  // max_pool2d only
  bool ceil_mode = false;
  bool count_include_pad = true;      // avg_pool2d only
  std::int64_t divisor_override = 0;  // avg_pool2d only; 0: none
};
struct PoolCall {
  TensorView out, indices, input;  // indices: max_pool2d only
  Pool2dParams params;             // not for adaptive_avg_pool2d
};
using PoolKernel = Status (*)(const KernelContext& ctx, const PoolCall& call);
struct PoolBackwardCall {
  TensorView grad_input, grad_out, input, indices;  // indices: max_pool2d
  Pool2dParams params;
};
using PoolBackwardKernel = Status (*)(const KernelContext& ctx,
                                      const PoolBackwardCall& call);

// ---- Scratch memory ---------------------------------------------------------
// Device memory for one kernel call (an aclnn workspace, a BLAS workspace),
// from core's caching allocator on ctx's device and stream: call from inside
// a kernel, use it only in work the kernel enqueues on ctx.stream, and release
// it before the kernel returns. Release is stream-ordered, as any free of the
// caching allocator: later work on the stream may reuse the memory, never
// earlier or concurrent work. Out of memory throws (torch.OutOfMemoryError),
// as every allocation does; 0 bytes gives nullptr.
TORCH_BACKEND_API void* allocate_workspace(const KernelContext& ctx,
                                           std::size_t bytes);
TORCH_BACKEND_API void release_workspace(void* ptr);

// Owns one workspace for a scope.
class KernelWorkspace {
 public:
  KernelWorkspace(const KernelContext& ctx, std::size_t bytes)
      : ptr_(allocate_workspace(ctx, bytes)) {}
  ~KernelWorkspace() { release_workspace(ptr_); }
  KernelWorkspace(const KernelWorkspace&) = delete;
  KernelWorkspace& operator=(const KernelWorkspace&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_;
};

// Filled by the backend's TORCH_BACKEND_DEFINE_DEVICE_KERNELS function. The
// kernel names each family accepts are the op table's (`python -m
// torch_backend ops`); an unknown name is an error at activation.
class TORCH_BACKEND_API KernelRegistry {
 public:
  virtual ~KernelRegistry();
  virtual void elementwise(const char* name, ElementwiseKernel kernel) = 0;
  virtual void reduction(const char* name, ReductionKernel kernel) = 0;
  virtual void gemm(GemmKernel kernel) = 0;
  // "softmax" or "log_softmax".
  virtual void softmax(const char* name, SoftmaxKernel forward,
                       SoftmaxBackwardKernel backward) = 0;
  virtual void nll_loss(NllLossKernel forward,
                        NllLossBackwardKernel backward) = 0;
  // "index_select", "index_add", "gather" or "scatter_add".
  virtual void indexing(const char* name, IndexKernel kernel) = 0;
  // "max" or "min".
  virtual void arg_reduction(const char* name, ArgReductionKernel kernel) = 0;
  virtual void layer_norm(LayerNormKernel forward,
                          LayerNormBackwardKernel backward) = 0;
  virtual void dropout(DropoutKernel kernel) = 0;
  virtual void batch_norm(BatchNormKernel forward,
                          BatchNormBackwardKernel backward) = 0;
  // var, var_mean, std and std_mean.
  virtual void variance(VarianceKernel kernel) = 0;
  virtual void attention(AttentionKernel forward,
                         AttentionBackwardKernel backward) = 0;
  virtual void multi_tensor(const char* name, MultiTensorKernel kernel) = 0;
  virtual void convolution(ConvolutionKernel forward,
                           ConvolutionBackwardKernel backward) = 0;
  // "max_pool2d", "avg_pool2d" or "adaptive_avg_pool2d".
  virtual void pooling(const char* name, PoolKernel forward,
                       PoolBackwardKernel backward) = 0;
};

}  // namespace torch_backend

#define TORCH_BACKEND_DEVICE_KERNELS_SYMBOL "torch_backend_device_kernels"

#define TORCH_BACKEND_DEFINE_DEVICE_KERNELS(registry)                      \
  extern "C" TORCH_BACKEND_EXPORT int torch_backend_device_kernels_abi() { \
    return ::torch_backend::kDeviceKernelsAbiVersion;                      \
  }                                                                        \
  extern "C" TORCH_BACKEND_EXPORT void torch_backend_device_kernels(       \
      ::torch_backend::KernelRegistry& registry)
