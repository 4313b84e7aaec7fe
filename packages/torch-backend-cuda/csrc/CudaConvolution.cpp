// The convolution family on cuDNN (DeviceKernels.h), through its descriptor
// API as PyTorch's CUDA backend used it: forward is cudnnConvolutionForward
// plus cudnnAddTensor for the bias; backward is cudnnConvolutionBackwardData
// and ...BackwardFilter, and the bias gradient a sum of grad_out over all but
// the channels on the backend's reduction kernel (as PyTorch sums it beside
// cuDNN; cuDNN's BackwardBias refuses bfloat16). A transposed convolution is
// the adjoint of an ordinary one with the same weight, so its forward is
// BackwardData and its input gradient is Forward. Each configuration takes
// cuDNN's heuristically best algorithm (the _v7 queries, made once per
// configuration) and its workspace from core's caching allocator. 1-d
// convolutions run as 2-d ones with a unit height, as cuDNN wants at least four
// dimensions. Layouts other than dense contiguous or channels-last, and sizes
// past cuDNN's 32-bit ones, are declined: core runs them on the fallback.
#include <cudnn.h>

#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <torch_backend/DeviceKernels.h>

#include "CudaBackend.h"

namespace {

using torch_backend::ConvolutionBackwardCall;
using torch_backend::ConvolutionCall;
using torch_backend::ConvolutionParams;
using torch_backend::DType;
using torch_backend::KernelContext;
using torch_backend::kNotSupported;
using torch_backend::kSuccess;
using torch_backend::Status;
using torch_backend::TensorView;

int cudnn_status(cudnnStatus_t status) {
  return status == CUDNN_STATUS_SUCCESS
             ? kSuccess
             : gpu::kCudnnStatusBase + static_cast<int>(status);
}

#define CUDNN_TRY(call)                        \
  do {                                         \
    const Status status_ = cudnn_status(call); \
    if (status_ != kSuccess) {                 \
      return status_;                          \
    }                                          \
  } while (0)

// One handle per host thread and device, never destroyed (core's shutdown
// contract: no teardown at exit).
Status handle_for(const KernelContext& ctx, cudnnHandle_t* out) {
  thread_local std::unordered_map<int, cudnnHandle_t> handles;
  cudnnHandle_t& handle = handles[ctx.device];
  if (handle == nullptr) {
    const Status created = cudnn_status(cudnnCreate(&handle));
    if (created != kSuccess) {
      handle = nullptr;
      return created;
    }
  }
  *out = handle;
  return cudnn_status(cudnnSetStream(handle, gpu::stream_of(ctx.stream)));
}

bool data_type(DType dtype, cudnnDataType_t* type) {
  switch (dtype) {
    case DType::Float32:
      *type = CUDNN_DATA_FLOAT;
      return true;
    case DType::Float16:
      *type = CUDNN_DATA_HALF;
      return true;
    case DType::BFloat16:
      *type = CUDNN_DATA_BFLOAT16;
      return true;
    case DType::Float64:
      *type = CUDNN_DATA_DOUBLE;
      return true;
    default:
      return false;
  }
}

bool fits_int(std::int64_t value) { return value >= 0 && value <= INT_MAX; }

// A view as cuDNN takes it: at least 4 dimensions (1-d gains a unit height
// before its length), sizes and strides in int.
struct Shape {
  int dims = 0;
  int sizes[5] = {};
  int strides[5] = {};
  bool valid = true;

  explicit Shape(const TensorView& view) {
    const bool one_d = view.dim == 3;
    dims = one_d ? 4 : view.dim;
    std::int64_t extent = 1;  // the largest element offset, plus one
    for (int d = 0, k = 0; d < dims; ++d) {
      std::int64_t size = 0, stride = 0;
      if (one_d && d == 2) {
        size = 1;
        stride = view.sizes[2] * view.strides[2];
      } else {
        size = view.sizes[k];
        stride = view.strides[k];
        ++k;
      }
      valid = valid && fits_int(size) && fits_int(stride);
      sizes[d] = static_cast<int>(size);
      strides[d] = static_cast<int>(stride > 0 ? stride : 1);
      extent += (size - 1) * (stride > 0 ? stride : 0);
    }
    valid = valid && fits_int(extent);
  }

  // Dense with the channels innermost: (N, H, W, C) in memory.
  bool channels_last() const {
    std::int64_t expected = 1;
    if (sizes[1] != 1 && strides[1] != 1) {
      return false;
    }
    expected = sizes[1];
    for (int d = dims - 1; d >= 2; --d) {
      if (sizes[d] != 1 && strides[d] != expected) {
        return false;
      }
      expected *= sizes[d];
    }
    return sizes[0] == 1 || strides[0] == expected;
  }
  bool contiguous() const {
    std::int64_t expected = 1;
    for (int d = dims - 1; d >= 0; --d) {
      if (sizes[d] != 1 && strides[d] != expected) {
        return false;
      }
      expected *= sizes[d];
    }
    return true;
  }
};

const void* start_of(const TensorView& view) {
  return static_cast<const char*>(view.data) +
         view.offset * static_cast<std::int64_t>(element_size(view.dtype));
}
void* mutable_start_of(const TensorView& view) {
  return const_cast<void*>(start_of(view));
}

// cuDNN descriptors for one call, destroyed with it.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  // What the descriptors hold, as numbers: the algorithm cache's key.
  std::vector<std::int64_t> key;

  ~Descriptors() {
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(bias);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(conv);
  }
};

Status tensor_descriptor(const Shape& shape, cudnnDataType_t type,
                         cudnnTensorDescriptor_t* out) {
  CUDNN_TRY(cudnnCreateTensorDescriptor(out));
  return cudnn_status(cudnnSetTensorNdDescriptor(*out, type, shape.dims,
                                                 shape.sizes, shape.strides));
}

// The convolution as cuDNN's forward one: `data` is the tensor with the
// weight's input channels (the input, or a transposed convolution's output),
// `result` the one with its output channels. The weight is NCHW or NHWC
// dense, like the data (core sends one layout to all).
Status describe(const ConvolutionParams& p, const TensorView& data,
                const TensorView& weight, const TensorView& result,
                Descriptors* d) {
  cudnnDataType_t type;
  if (!data_type(weight.dtype, &type) || p.spatial_dims < 1 ||
      p.spatial_dims > 3) {
    return kNotSupported;
  }
  const Shape x(data), w(weight), y(result);
  if (!x.valid || !w.valid || !y.valid || !fits_int(p.groups)) {
    return kNotSupported;
  }
  cudnnTensorFormat_t format;
  if (w.contiguous() && x.contiguous() && y.contiguous()) {
    format = CUDNN_TENSOR_NCHW;
  } else if (w.channels_last() && x.channels_last() && y.channels_last()) {
    format = CUDNN_TENSOR_NHWC;
  } else {
    return kNotSupported;
  }
  const bool one_d = p.spatial_dims == 1;
  const int spatial = one_d ? 2 : p.spatial_dims;
  int padding[3], stride[3], dilation[3];
  for (int s = 0; s < spatial; ++s) {
    const int k = one_d ? s - 1 : s;  // 1-d: the unit height comes first
    const bool unit = k < 0;
    if (!unit && (!fits_int(p.padding[k]) || !fits_int(p.stride[k]) ||
                  !fits_int(p.dilation[k]))) {
      return kNotSupported;
    }
    padding[s] = unit ? 0 : static_cast<int>(p.padding[k]);
    stride[s] = unit ? 1 : static_cast<int>(p.stride[k]);
    dilation[s] = unit ? 1 : static_cast<int>(p.dilation[k]);
  }
  // Half and bfloat16 accumulate in float, as PyTorch's CUDA convolutions.
  const cudnnDataType_t compute =
      type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_TENSOR_OP_MATH;
  if (type == CUDNN_DATA_DOUBLE) {
    math = CUDNN_DEFAULT_MATH;
  } else if (type == CUDNN_DATA_FLOAT && !p.allow_reduced_precision) {
    math = CUDNN_FMA_MATH;  // no TF32 (torch.backends.cudnn.allow_tf32 off)
  }
  CUDNN_TRY(cudnnCreateConvolutionDescriptor(&d->conv));
  CUDNN_TRY(cudnnSetConvolutionNdDescriptor(d->conv, spatial, padding, stride,
                                            dilation, CUDNN_CROSS_CORRELATION,
                                            compute));
  CUDNN_TRY(cudnnSetConvolutionGroupCount(d->conv, static_cast<int>(p.groups)));
  CUDNN_TRY(cudnnSetConvolutionMathType(d->conv, math));
  CUDNN_TRY(cudnnCreateFilterDescriptor(&d->w));
  CUDNN_TRY(cudnnSetFilterNdDescriptor(d->w, type, format, w.dims, w.sizes));
  d->key = {type, format, math, p.groups, spatial, x.dims};
  for (int s = 0; s < spatial; ++s) {
    d->key.insert(d->key.end(), {padding[s], stride[s], dilation[s]});
  }
  for (const Shape* shape : {&x, &w, &y}) {
    d->key.insert(d->key.end(), shape->sizes, shape->sizes + shape->dims);
    d->key.insert(d->key.end(), shape->strides, shape->strides + shape->dims);
  }
  const Status described = tensor_descriptor(x, type, &d->x);
  return described != kSuccess ? described : tensor_descriptor(y, type, &d->y);
}

// (1, C, 1, ...) over a bias of C contiguous elements, for `like`'s rank.
Status bias_descriptor(const TensorView& bias, const TensorView& like,
                       Descriptors* d) {
  cudnnDataType_t type;
  if (!data_type(bias.dtype, &type) || !fits_int(bias.sizes[0]) ||
      (bias.sizes[0] != 1 && bias.strides[0] != 1)) {
    return kNotSupported;
  }
  const int dims = like.dim == 3 ? 4 : like.dim;
  int sizes[5] = {1, static_cast<int>(bias.sizes[0]), 1, 1, 1};
  int strides[5] = {static_cast<int>(bias.sizes[0]), 1, 1, 1, 1};
  CUDNN_TRY(cudnnCreateTensorDescriptor(&d->bias));
  return cudnn_status(
      cudnnSetTensorNdDescriptor(d->bias, type, dims, sizes, strides));
}

// alpha = 1 and beta = 0 or 1, as the data type's scaling type.
struct Scale {
  float one_f = 1.0f, zero_f = 0.0f;
  double one_d = 1.0, zero_d = 0.0;
  bool is_double;
  explicit Scale(DType dtype) : is_double(dtype == DType::Float64) {}
  const void* one() const {
    return is_double ? static_cast<const void*>(&one_d) : &one_f;
  }
  const void* zero() const {
    return is_double ? static_cast<const void*>(&zero_d) : &zero_f;
  }
};

constexpr int kAlgorithmCandidates = 8;

// An algorithm cuDNN's heuristics chose and the workspace it needs.
struct Algorithm {
  int algo = 0;
  std::size_t workspace_bytes = 0;
};

// cuDNN's heuristic and workspace queries cost about a millisecond per call,
// more than a convolution of ResNet's sizes: the choice for a configuration
// (its descriptors' contents, direction and device) is kept, as PyTorch's
// CUDA convolutions keep theirs. Never destroyed (no teardown at exit).
class AlgorithmCache {
 public:
  bool find(const std::vector<std::int64_t>& key, Algorithm* out) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = chosen_.find(key);
    if (it == chosen_.end()) {
      return false;
    }
    *out = it->second;
    return true;
  }
  void store(const std::vector<std::int64_t>& key, const Algorithm& chosen) {
    const std::lock_guard<std::mutex> lock(mutex_);
    chosen_.emplace(key, chosen);
  }

 private:
  std::mutex mutex_;
  std::map<std::vector<std::int64_t>, Algorithm> chosen_;
};

AlgorithmCache& algorithm_cache() {
  static auto* cache = new AlgorithmCache;
  return *cache;
}

enum class Direction { Forward, BackwardData, BackwardFilter };

// Runs one direction with the configuration's algorithm: the cached one, or
// the first of cuDNN's heuristic candidates (find: the _v7 query) whose
// workspace size (size) cuDNN reports. run(algo, workspace, bytes) calls it.
template <typename Perf, typename Find, typename Size, typename Run>
Status run_with_algorithm(Direction direction, const KernelContext& ctx,
                          const Descriptors& d, Find find, Size size, Run run) {
  std::vector<std::int64_t> key = d.key;
  key.push_back(static_cast<std::int64_t>(direction));
  key.push_back(ctx.device);
  Algorithm chosen;
  if (!algorithm_cache().find(key, &chosen)) {
    Perf found[kAlgorithmCandidates];
    int count = 0;
    CUDNN_TRY(find(kAlgorithmCandidates, &count, found));
    int i = 0;
    for (; i < count; ++i) {
      std::size_t bytes = 0;
      if (found[i].status == CUDNN_STATUS_SUCCESS &&
          size(found[i].algo, &bytes) == CUDNN_STATUS_SUCCESS) {
        chosen = {static_cast<int>(found[i].algo), bytes};
        break;
      }
    }
    if (i == count) {
      return kNotSupported;
    }
    algorithm_cache().store(key, chosen);
  }
  torch_backend::KernelWorkspace workspace(ctx, chosen.workspace_bytes);
  return cudnn_status(
      run(chosen.algo, workspace.get(), chosen.workspace_bytes));
}

// cuDNN's convolution directions: result = conv(data, weight) forward;
// data's gradient from result's (BackwardData); weight's gradient
// (BackwardFilter).
Status forward(cudnnHandle_t handle, const KernelContext& ctx,
               const Descriptors& d, const Scale& scale, const void* data,
               const void* weight, void* result) {
  using Algo = cudnnConvolutionFwdAlgo_t;
  return run_with_algorithm<cudnnConvolutionFwdAlgoPerf_t>(
      Direction::Forward, ctx, d,
      [&](int wanted, int* count, cudnnConvolutionFwdAlgoPerf_t* found) {
        return cudnnGetConvolutionForwardAlgorithm_v7(
            handle, d.x, d.w, d.conv, d.y, wanted, count, found);
      },
      [&](Algo algo, std::size_t* bytes) {
        return cudnnGetConvolutionForwardWorkspaceSize(handle, d.x, d.w, d.conv,
                                                       d.y, algo, bytes);
      },
      [&](int algo, void* workspace, std::size_t bytes) {
        return cudnnConvolutionForward(handle, scale.one(), d.x, data, d.w,
                                       weight, d.conv, static_cast<Algo>(algo),
                                       workspace, bytes, scale.zero(), d.y,
                                       result);
      });
}

Status backward_data(cudnnHandle_t handle, const KernelContext& ctx,
                     const Descriptors& d, const Scale& scale,
                     const void* weight, const void* result_grad,
                     void* data_grad) {
  using Algo = cudnnConvolutionBwdDataAlgo_t;
  return run_with_algorithm<cudnnConvolutionBwdDataAlgoPerf_t>(
      Direction::BackwardData, ctx, d,
      [&](int wanted, int* count, cudnnConvolutionBwdDataAlgoPerf_t* found) {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7(
            handle, d.w, d.y, d.conv, d.x, wanted, count, found);
      },
      [&](Algo algo, std::size_t* bytes) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            handle, d.w, d.y, d.conv, d.x, algo, bytes);
      },
      [&](int algo, void* workspace, std::size_t bytes) {
        return cudnnConvolutionBackwardData(
            handle, scale.one(), d.w, weight, d.y, result_grad, d.conv,
            static_cast<Algo>(algo), workspace, bytes, scale.zero(), d.x,
            data_grad);
      });
}

Status backward_filter(cudnnHandle_t handle, const KernelContext& ctx,
                       const Descriptors& d, const Scale& scale,
                       const void* data, const void* result_grad,
                       void* weight_grad) {
  using Algo = cudnnConvolutionBwdFilterAlgo_t;
  return run_with_algorithm<cudnnConvolutionBwdFilterAlgoPerf_t>(
      Direction::BackwardFilter, ctx, d,
      [&](int wanted, int* count, cudnnConvolutionBwdFilterAlgoPerf_t* found) {
        return cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            handle, d.x, d.y, d.conv, d.w, wanted, count, found);
      },
      [&](Algo algo, std::size_t* bytes) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(
            handle, d.x, d.y, d.conv, d.w, algo, bytes);
      },
      [&](int algo, void* workspace, std::size_t bytes) {
        return cudnnConvolutionBackwardFilter(
            handle, scale.one(), d.x, data, d.y, result_grad, d.conv,
            static_cast<Algo>(algo), workspace, bytes, scale.zero(), d.w,
            weight_grad);
      });
}

// cuDNN's BackwardData needs dx's size to be what forward maps back onto dy;
// an output_padding of a stride or more (allowed below the dilation) is not.
bool transposable(const ConvolutionParams& p) {
  for (int s = 0; s < p.spatial_dims; ++s) {
    if (p.output_padding[s] >= p.stride[s]) {
      return false;
    }
  }
  return true;
}

}  // namespace

namespace gpu {

std::string cudnn_status_text(int status) {
  return cudnnGetErrorString(
      static_cast<cudnnStatus_t>(status - kCudnnStatusBase));
}

Status cudnn_convolution(const KernelContext& ctx,
                         const ConvolutionCall& call) {
  const ConvolutionParams& p = call.params;
  if (p.transposed && !transposable(p)) {
    return kNotSupported;
  }
  Descriptors d;
  // A transposed convolution's output is the data of the adjoint forward one.
  const TensorView& data = p.transposed ? call.out : call.input;
  const TensorView& result = p.transposed ? call.input : call.out;
  Status status = describe(p, data, call.weight, result, &d);
  if (status == kSuccess && call.bias.data != nullptr) {
    status = bias_descriptor(call.bias, call.out, &d);
  }
  cudnnHandle_t handle = nullptr;
  if (status == kSuccess) {
    status = handle_for(ctx, &handle);
  }
  if (status != kSuccess) {
    return status;
  }
  const Scale scale(call.out.dtype);
  status = p.transposed
               ? backward_data(handle, ctx, d, scale, start_of(call.weight),
                               start_of(call.input), mutable_start_of(call.out))
               : forward(handle, ctx, d, scale, start_of(call.input),
                         start_of(call.weight), mutable_start_of(call.out));
  if (status != kSuccess || call.bias.data == nullptr) {
    return status;
  }
  // out += bias, broadcast over every position; out's descriptor is d.y
  // forward, d.x transposed.
  return cudnn_status(cudnnAddTensor(
      handle, scale.one(), d.bias, start_of(call.bias), scale.one(),
      p.transposed ? d.x : d.y, mutable_start_of(call.out)));
}

Status cudnn_convolution_backward(const KernelContext& ctx,
                                  const ConvolutionBackwardCall& call) {
  const ConvolutionParams& p = call.params;
  if (p.transposed && !transposable(p)) {
    return kNotSupported;
  }
  Descriptors d;
  const TensorView& data = p.transposed ? call.grad_out : call.input;
  const TensorView& result = p.transposed ? call.input : call.grad_out;
  Status status = describe(p, data, call.weight, result, &d);
  cudnnHandle_t handle = nullptr;
  if (status == kSuccess) {
    status = handle_for(ctx, &handle);
  }
  if (status != kSuccess) {
    return status;
  }
  const Scale scale(call.grad_out.dtype);
  if (call.grad_input.data != nullptr) {
    // Ordinary: the input's gradient flows back through the weight;
    // transposed: it is the forward convolution of grad_out.
    status =
        p.transposed
            ? forward(handle, ctx, d, scale, start_of(call.grad_out),
                      start_of(call.weight), mutable_start_of(call.grad_input))
            : backward_data(handle, ctx, d, scale, start_of(call.weight),
                            start_of(call.grad_out),
                            mutable_start_of(call.grad_input));
  }
  if (status == kSuccess && call.grad_weight.data != nullptr) {
    status = p.transposed
                 ? backward_filter(
                       handle, ctx, d, scale, start_of(call.grad_out),
                       start_of(call.input), mutable_start_of(call.grad_weight))
                 : backward_filter(handle, ctx, d, scale, start_of(call.input),
                                   start_of(call.grad_out),
                                   mutable_start_of(call.grad_weight));
  }
  if (status == kSuccess && call.grad_bias.data != nullptr) {
    status = gpu::sum_but_channels(ctx, call.grad_bias, call.grad_out);
  }
  return status;
}

}  // namespace gpu
