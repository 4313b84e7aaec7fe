// The matrix-multiply family on cuBLAS: out = alpha * a @ b + beta * c for a
// batch of strided matrices, through cublasGemmStridedBatchedEx. cuBLAS is
// column-major: a row-major view is read as its transpose, and a row-major
// out is computed as out^T = b^T @ a^T. Views cuBLAS cannot address (no unit
// stride in either dimension) are declined, and core runs them elsewhere.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <climits>
#include <cstdint>
#include <unordered_map>

#include <torch_backend/DeviceKernels.h>

#include "CudaBackend.h"

namespace {

using torch_backend::DType;
using torch_backend::GemmCall;
using torch_backend::KernelContext;
using torch_backend::kNotSupported;
using torch_backend::kSuccess;
using torch_backend::Status;
using torch_backend::TensorView;

int cublas_status(cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS
             ? kSuccess
             : gpu::kCublasStatusBase + static_cast<int>(status);
}

struct Handle {
  cublasHandle_t handle = nullptr;
  std::size_t workspace_bytes = 0;
};

// One handle per host thread and device, as cuBLAS recommends; never
// destroyed (core's shutdown contract: no teardown at exit).
Status handle_for(int device, Handle** out) {
  thread_local std::unordered_map<int, Handle> handles;
  Handle& entry = handles[device];
  if (entry.handle == nullptr) {
    int major = 0;
    const cudaError_t attribute = cudaDeviceGetAttribute(
        &major, cudaDevAttrComputeCapabilityMajor, device);
    if (attribute != cudaSuccess) {
      return attribute;
    }
    const Status created = cublas_status(cublasCreate(&entry.handle));
    if (created != kSuccess) {
      entry.handle = nullptr;
      return created;
    }
    // cuBLAS's recommended workspace: 32 MiB from Hopper on, 4 MiB before.
    entry.workspace_bytes = major >= 9 ? (32u << 20) : (4u << 20);
  }
  *out = &entry;
  return kSuccess;
}

// How cuBLAS reads one (rows, cols) matrix of a batched view.
struct Operand {
  cublasOperation_t op = CUBLAS_OP_N;
  std::int64_t ld = 1;
  bool addressable = false;
};

Operand operand(const TensorView& view) {
  const std::int64_t rows = view.sizes[1], cols = view.sizes[2];
  const std::int64_t row_stride = view.strides[1], col_stride = view.strides[2];
  const std::int64_t min_rows = rows > 1 ? rows : 1,
                     min_cols = cols > 1 ? cols : 1;
  Operand result;
  if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= min_rows)) {
    result = {CUBLAS_OP_N, cols == 1 ? min_rows : col_stride, true};
  } else if ((col_stride == 1 || cols == 1) &&
             (rows == 1 || row_stride >= min_cols)) {
    result = {CUBLAS_OP_T, rows == 1 ? min_cols : row_stride, true};
  }
  return result;
}

cublasOperation_t flipped(cublasOperation_t op) {
  return op == CUBLAS_OP_N ? CUBLAS_OP_T : CUBLAS_OP_N;
}

bool data_type(DType dtype, cudaDataType* type) {
  switch (dtype) {
    case DType::Float16:
      *type = CUDA_R_16F;
      return true;
    case DType::BFloat16:
      *type = CUDA_R_16BF;
      return true;
    case DType::Float32:
      *type = CUDA_R_32F;
      return true;
    case DType::Float64:
      *type = CUDA_R_64F;
      return true;
    default:
      return false;
  }
}

const void* start_of(const TensorView& view) {
  return static_cast<const char*>(view.data) +
         view.offset * static_cast<std::int64_t>(element_size(view.dtype));
}

bool fits_int(std::int64_t value) { return value >= 0 && value <= INT_MAX; }

// c into out, where beta reads it and it is not out itself.
Status copy_addend(const KernelContext& ctx, const GemmCall& call) {
  const TensorView& c = call.c;
  const TensorView& out = call.out;
  bool same = c.data == out.data && c.offset == out.offset;
  for (int d = 0; same && d < 3; ++d) {
    same = out.sizes[d] == 1 || c.strides[d] == out.strides[d];
  }
  if (same) {
    return kSuccess;
  }
  torch_backend::ElementwiseCall copy;
  copy.out = out;
  copy.inputs[0] = c;
  copy.num_inputs = 1;
  return gpu::copy_into(ctx, copy);
}

}  // namespace

namespace gpu {

std::string cublas_status_text(int status) {
  const auto native = static_cast<cublasStatus_t>(status - kCublasStatusBase);
  return std::string(cublasGetStatusName(native)) + ": " +
         cublasGetStatusString(native);
}

Status cublas_gemm(const KernelContext& ctx, const GemmCall& call) {
  cudaDataType type;
  if (!data_type(call.out.dtype, &type)) {
    return kNotSupported;
  }
  const std::int64_t batch = call.out.sizes[0], rows = call.out.sizes[1],
                     cols = call.out.sizes[2], inner = call.a.sizes[2];
  const Operand out = operand(call.out), a = operand(call.a),
                b = operand(call.b);
  if (!out.addressable || !a.addressable || !b.addressable || !fits_int(rows) ||
      !fits_int(cols) || !fits_int(inner) || !fits_int(batch) ||
      !fits_int(out.ld) || !fits_int(a.ld) || !fits_int(b.ld)) {
    return kNotSupported;
  }
  const bool reads_c = call.beta != 0;
  if (reads_c) {
    const Status copied = copy_addend(ctx, call);
    if (copied != kSuccess) {
      return copied;
    }
  }
  Handle* handle = nullptr;
  Status status = handle_for(ctx.device, &handle);
  if (status != kSuccess) {
    return status;
  }
  const auto stream = gpu::stream_of(ctx.stream);
  status = cublas_status(cublasSetStream(handle->handle, stream));
  torch_backend::KernelWorkspace workspace(ctx, handle->workspace_bytes);
  if (status == kSuccess) {
    status = cublas_status(cublasSetWorkspace(handle->handle, workspace.get(),
                                              handle->workspace_bytes));
  }
  if (status != kSuccess) {
    return status;
  }
  // float scalars, double for double; compute in float for the 16-bit types,
  // and for float32 in TF32 only where the user allowed it (PyTorch's
  // torch.backends.cuda.matmul.allow_tf32, off by default).
  const bool is_double = call.out.dtype == DType::Float64;
  const float alpha_f = static_cast<float>(call.alpha);
  const float beta_f = reads_c ? static_cast<float>(call.beta) : 0.0f;
  const double alpha_d = call.alpha, beta_d = reads_c ? call.beta : 0.0;
  const void* alpha = is_double ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = is_double ? static_cast<const void*>(&beta_d) : &beta_f;
  const bool tf32 =
      call.out.dtype == DType::Float32 && call.allow_reduced_precision;
  const cublasComputeType_t compute =
      is_double ? CUBLAS_COMPUTE_64F
                : (tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  void* c = const_cast<void*>(start_of(call.out));
  const long long c_stride = call.out.strides[0];
  if (out.op == CUBLAS_OP_N) {  // out = a @ b, column-major
    return cublas_status(cublasGemmStridedBatchedEx(
        handle->handle, a.op, b.op, static_cast<int>(rows),
        static_cast<int>(cols), static_cast<int>(inner), alpha,
        start_of(call.a), type, static_cast<int>(a.ld), call.a.strides[0],
        start_of(call.b), type, static_cast<int>(b.ld), call.b.strides[0], beta,
        c, type, static_cast<int>(out.ld), c_stride, static_cast<int>(batch),
        compute, CUBLAS_GEMM_DEFAULT));
  }
  // out^T = b^T @ a^T, out^T column-major.
  return cublas_status(cublasGemmStridedBatchedEx(
      handle->handle, flipped(b.op), flipped(a.op), static_cast<int>(cols),
      static_cast<int>(rows), static_cast<int>(inner), alpha, start_of(call.b),
      type, static_cast<int>(b.ld), call.b.strides[0], start_of(call.a), type,
      static_cast<int>(a.ld), call.a.strides[0], beta, c, type,
      static_cast<int>(out.ld), c_stride, static_cast<int>(batch), compute,
      CUBLAS_GEMM_DEFAULT));
}

}  // namespace gpu
