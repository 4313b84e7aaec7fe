// What npu's kernel files share: aclnn descriptors over core's tensor views
// for the length of one call, and aclnn's two-phase launch (plan, workspace
// from core's caching allocator, enqueue on the kernel's stream).
#pragma once

#include <aclnn/acl_meta.h>

#include <torch_backend/DeviceKernels.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace npu {

using torch_backend::DType;
using torch_backend::ElementwiseCall;
using torch_backend::KernelContext;
using torch_backend::ScalarValue;
using torch_backend::Status;
using torch_backend::TensorView;

inline aclDataType acl_dtype(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return ACL_BOOL;
    case DType::UInt8:
      return ACL_UINT8;
    case DType::Int8:
      return ACL_INT8;
    case DType::Int16:
      return ACL_INT16;
    case DType::Int32:
      return ACL_INT32;
    case DType::Int64:
      return ACL_INT64;
    case DType::Float16:
      return ACL_FLOAT16;
    case DType::BFloat16:
      return ACL_BF16;
    case DType::Float32:
      return ACL_FLOAT;
    case DType::Float64:
      return ACL_DOUBLE;
  }
  return ACL_DT_UNDEFINED;
}

// An aclTensor over a view for the length of one call.
class Tensor {
 public:
  explicit Tensor(const TensorView& view) {
    // Storage: the elements the view spans from its base, as one dimension
    // (none for an empty view).
    std::int64_t extent = view.numel() == 0 ? 0 : view.offset + 1;
    for (std::int32_t d = 0; d < view.dim && extent > 0; ++d) {
      extent += (view.sizes[d] - 1) * view.strides[d];
    }
    tensor_ = aclCreateTensor(view.sizes, view.dim, acl_dtype(view.dtype),
                              view.strides, view.offset, ACL_FORMAT_ND, &extent,
                              1, view.data);
  }
  ~Tensor() {
    if (tensor_ != nullptr) {
      aclDestroyTensor(tensor_);
    }
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  operator aclTensor*() const { return tensor_; }

 private:
  aclTensor* tensor_ = nullptr;
};

// An optional argument: an absent view (data == nullptr) is a null
// descriptor, as aclnn takes one. (An empty tensor may also have no data:
// required arguments always use Tensor.)
class OptionalTensor {
 public:
  explicit OptionalTensor(const TensorView& view) {
    if (view.data != nullptr) {
      tensor_.emplace(view);
    }
  }
  operator aclTensor*() const {
    return tensor_ ? static_cast<aclTensor*>(*tensor_) : nullptr;
  }

 private:
  std::optional<Tensor> tensor_;
};

class Scalar {
 public:
  explicit Scalar(const ScalarValue& value)
      : as_double_(value.as_double), as_int_(value.as_int) {
    scalar_ = value.is_integral ? aclCreateScalar(&as_int_, ACL_INT64)
                                : aclCreateScalar(&as_double_, ACL_DOUBLE);
  }
  // An operand beside a tensor of `dtype`: a Bool one stays Bool, where an
  // Int64 scalar would promote the op's result to Int64 (aclnn promotes as
  // PyTorch does).
  Scalar(const ScalarValue& value, DType dtype) : Scalar(value) {
    if (dtype == DType::Bool) {
      aclDestroyScalar(scalar_);
      as_bool_ = value.as_int != 0;
      scalar_ = aclCreateScalar(&as_bool_, ACL_BOOL);
    }
  }
  ~Scalar() { aclDestroyScalar(scalar_); }
  Scalar(const Scalar&) = delete;
  Scalar& operator=(const Scalar&) = delete;
  operator aclScalar*() const { return scalar_; }

 private:
  double as_double_;
  std::int64_t as_int_;
  bool as_bool_ = false;
  aclScalar* scalar_ = nullptr;
};

class IntArray {
 public:
  explicit IntArray(const std::vector<std::int64_t>& values)
      : array_(aclCreateIntArray(values.data(), values.size())) {}
  ~IntArray() { aclDestroyIntArray(array_); }
  IntArray(const IntArray&) = delete;
  IntArray& operator=(const IntArray&) = delete;
  operator aclIntArray*() const { return array_; }

 private:
  aclIntArray* array_;
};

// aclnn takes the mask of gradients to compute; core leaves out the others.
class OutputMask {
 public:
  OutputMask(const TensorView& first, const TensorView& second,
             const TensorView& third) {
    const bool mask[3] = {first.data != nullptr, second.data != nullptr,
                          third.data != nullptr};
    array_ = aclCreateBoolArray(mask, 3);
  }
  ~OutputMask() { aclDestroyBoolArray(array_); }
  OutputMask(const OutputMask&) = delete;
  OutputMask& operator=(const OutputMask&) = delete;
  operator aclBoolArray*() const { return array_; }

 private:
  aclBoolArray* array_;
};

// cubeMathType of the matrix operators (GEMM, convolution): no reduced
// precision.
constexpr std::int8_t kKeepDtype = 0;

// aclnn's two phases for any operator: plan, take the workspace from core's
// caching allocator, enqueue on the kernel's stream. The descriptors
// (temporaries of the caller's expression) live until the launch returns.
template <typename Plan, typename Launch, typename... Args>
Status two_phase(const KernelContext& ctx, Plan plan, Launch launch,
                 Args&&... args) {
  std::uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus planned =
      plan(std::forward<Args>(args)..., &workspace_size, &executor);
  if (planned != 0) {
    return planned;
  }
  torch_backend::KernelWorkspace workspace(ctx, workspace_size);
  return launch(workspace.get(), workspace_size, executor, ctx.stream);
}

#define ACLNN(ctx, op, ...) \
  two_phase(ctx, op##GetWorkspaceSize, op, __VA_ARGS__)

}  // namespace npu
