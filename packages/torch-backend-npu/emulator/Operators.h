// Internal to the ACL emulator's operator library (libopapi.so): what its
// operator files share. aclnn's two phases for every operator: a Plan turns
// one call's descriptors into host tensors over the emulated device memory
// (the first problem fails the planning call with ACLNN_ERR_PARAM_INVALID),
// the executor keeps the computation, the second phase (launch) checks the
// workspace and enqueues it on the stream; the EMULATOR_* macros write both
// phases of the common operator shapes.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/_adaptive_avg_pool2d.h>
#include <ATen/ops/_adaptive_avg_pool2d_backward.h>
#include <ATen/ops/_log_softmax.h>
#include <ATen/ops/_log_softmax_backward_data.h>
#include <ATen/ops/_softmax.h>
#include <ATen/ops/_softmax_backward_data.h>
#include <ATen/ops/add.h>
#include <ATen/ops/addcdiv.h>
#include <ATen/ops/addcmul.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/avg_pool2d.h>
#include <ATen/ops/avg_pool2d_backward.h>
#include <ATen/ops/baddbmm.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/erf.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/ge.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/gelu_backward.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/index_add.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/le.h>
#include <ATen/ops/lerp.h>
#include <ATen/ops/log.h>
#include <ATen/ops/lt.h>
#include <ATen/ops/masked_fill.h>
#include <ATen/ops/max.h>
#include <ATen/ops/max_pool2d_with_indices.h>
#include <ATen/ops/max_pool2d_with_indices_backward.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/min.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/native_batch_norm.h>
#include <ATen/ops/native_batch_norm_backward.h>
#include <ATen/ops/native_layer_norm.h>
#include <ATen/ops/native_layer_norm_backward.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/neg.h>
#include <ATen/ops/nll_loss_backward.h>
#include <ATen/ops/nll_loss_forward.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/scatter_add.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/sigmoid_backward.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/silu_backward.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/tanh_backward.h>
#include <ATen/ops/threshold_backward.h>
#include <ATen/ops/where.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <array>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "Emulator.h"
#include "aclnn/aclnn_base.h"

// Exported under aclnn's names, as CANN's libopapi.so exports them.
#define EMULATOR_OP extern "C" ACLNN_API

struct aclOpExecutor {
  std::string name;
  std::uint64_t workspace = 0;
  std::function<void()> compute;
};

namespace {

using acl_emulator::fail;

// Operators that plan with scratch memory, as real ones do, so a backend's
// workspace path is exercised.
constexpr std::uint64_t kScratch = 16 * 1024;

at::ScalarType aten_dtype(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
      return at::kFloat;
    case ACL_FLOAT16:
      return at::kHalf;
    case ACL_BF16:
      return at::kBFloat16;
    case ACL_DOUBLE:
      return at::kDouble;
    case ACL_INT8:
      return at::kChar;
    case ACL_UINT8:
      return at::kByte;
    case ACL_INT16:
      return at::kShort;
    case ACL_INT32:
      return at::kInt;
    case ACL_INT64:
      return at::kLong;
    case ACL_BOOL:
      return at::kBool;
    default:
      return at::ScalarType::Undefined;
  }
}

// Turns one call's descriptors into host tensors, remembering the first
// problem: the planning call then fails with ACLNN_ERR_PARAM_INVALID.
class Plan {
 public:
  explicit Plan(const char* op) : op_(op) {}

  // An absent optional tensor (nullptr) is an undefined tensor.
  at::Tensor tensor(const aclTensor* t) {
    if (t == nullptr) {
      return {};
    }
    const at::ScalarType dtype = aten_dtype(t->dtype);
    if (dtype == at::ScalarType::Undefined) {
      problem("unsupported data type");
      return {};
    }
    const auto element = static_cast<int64_t>(c10::elementSize(dtype));
    int64_t extent = 1;  // elements the view spans from its offset
    bool empty = false;
    for (std::size_t d = 0; d < t->sizes.size(); ++d) {
      empty = empty || t->sizes[d] == 0;
      if (t->strides[d] < 0) {
        problem("negative stride");
        return {};
      }
      extent += (t->sizes[d] - 1) * t->strides[d];
    }
    char* base = static_cast<char*>(t->data) + t->offset * element;
    void* host = empty
                     ? nullptr
                     : acl_emulator::host_address(base, extent * element, op_);
    if (!empty && host == nullptr) {
      ok_ = false;  // host_address has set the message
      return {};
    }
    // A normal tensor even when the caller plans inside torch.inference_mode:
    // the stream thread, outside it, writes to it in place.
    const c10::InferenceMode not_inference(false);
    return at::from_blob(host, t->sizes, t->strides,
                         at::TensorOptions().dtype(dtype));
  }

  at::Tensor required(const aclTensor* t) {
    if (t == nullptr) {
      problem("a required tensor is null");
    }
    return tensor(t);
  }

  at::Scalar scalar(const aclScalar* s) {
    if (s == nullptr) {
      problem("a required scalar is null");
      return 0;
    }
    switch (s->dtype) {
      case ACL_FLOAT:
        return read<float>(s);
      case ACL_DOUBLE:
        return read<double>(s);
      case ACL_FLOAT16:
        return static_cast<float>(read<c10::Half>(s));
      case ACL_BF16:
        return static_cast<float>(read<c10::BFloat16>(s));
      case ACL_INT64:
        return read<int64_t>(s);
      case ACL_INT32:
        return read<int32_t>(s);
      case ACL_BOOL:
        return read<bool>(s);
      default:
        problem("unsupported scalar data type");
        return 0;
    }
  }

  std::vector<int64_t> ints(const aclIntArray* a) {
    if (a == nullptr) {
      problem("a required int array is null");
      return {};
    }
    return a->values;
  }

  // Finishes planning: an executor running `compute`, needing `workspace`.
  aclnnStatus finish(uint64_t* workspace_size, aclOpExecutor** executor,
                     std::uint64_t workspace, std::function<void()> compute) {
    if (workspace_size == nullptr || executor == nullptr) {
      return fail(ACLNN_ERR_PARAM_NULLPTR,
                  std::string(op_) + ": null workspaceSize or executor");
    }
    if (!ok_) {
      return ACLNN_ERR_PARAM_INVALID;
    }
    *workspace_size = workspace;
    *executor = new aclOpExecutor{op_, workspace, std::move(compute)};
    return ACLNN_SUCCESS;
  }

 private:
  template <typename T>
  T read(const aclScalar* s) {
    T value;
    std::memcpy(&value, s->bytes, sizeof(T));
    return value;
  }

  void problem(const char* what) {
    if (ok_) {
      fail(ACLNN_ERR_PARAM_INVALID, std::string(op_) + ": " + what);
    }
    ok_ = false;
  }

  const char* op_;
  bool ok_ = true;
};

// The second phase, the same for every operator.
aclnnStatus launch(const char* op, void* workspace, uint64_t workspace_size,
                   aclOpExecutor* executor, aclrtStream stream) {
  if (executor == nullptr) {
    return fail(ACLNN_ERR_PARAM_NULLPTR, std::string(op) + ": null executor");
  }
  const std::uint64_t needed = executor->workspace;
  if (workspace_size < needed ||
      (needed > 0 &&
       acl_emulator::host_address(workspace, needed, op) == nullptr)) {
    delete executor;
    return fail(ACLNN_ERR_PARAM_INVALID, std::string(op) +
                                             ": needs a device workspace of " +
                                             std::to_string(needed) + " bytes");
  }
  std::function<void()> compute = std::move(executor->compute);
  const std::string name = std::move(executor->name);
  delete executor;  // executors are single-use unless made repeatable
  return acl_emulator::enqueue(
      stream,
      [compute = std::move(compute), name] {
        try {
          compute();
          return ACL_SUCCESS;
        } catch (const std::exception& error) {
          return fail(ACLNN_ERR_INNER, name + " failed: " + error.what());
        }
      },
      op);
}

}  // namespace

// The second phase of `Name`.
#define EMULATOR_LAUNCH(Name)                                                 \
  EMULATOR_OP aclnnStatus Name(void* workspace, uint64_t workspaceSize,       \
                               aclOpExecutor* executor, aclrtStream stream) { \
    return launch(#Name, workspace, workspaceSize, executor, stream);         \
  }

// Binary operators with an alpha: out = self op alpha * other.
#define EMULATOR_ALPHA_BINARY(Name, aten_out)                                \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                            \
      const aclTensor* self, const aclTensor* other, const aclScalar* alpha, \
      aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {   \
    Plan plan(#Name);                                                        \
    auto a = plan.required(self), b = plan.required(other),                  \
         o = plan.required(out);                                             \
    auto s = plan.scalar(alpha);                                             \
    return plan.finish(workspaceSize, executor, 0,                           \
                       [=]() mutable { aten_out(o, a, b, s); });             \
  }                                                                          \
  EMULATOR_LAUNCH(Name)

// out = op(self, other).
#define EMULATOR_BINARY(Name, aten_out)                              \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                    \
      const aclTensor* self, const aclTensor* other, aclTensor* out, \
      uint64_t* workspaceSize, aclOpExecutor** executor) {           \
    Plan plan(#Name);                                                \
    auto a = plan.required(self), b = plan.required(other),          \
         o = plan.required(out);                                     \
    return plan.finish(workspaceSize, executor, 0,                   \
                       [=]() mutable { aten_out(o, a, b); });        \
  }                                                                  \
  EMULATOR_LAUNCH(Name)

// The emulator's model of a float16/bfloat16 add or sub with a host scalar:
// computed in float and rounded once, the scalar as given (what core's
// kernel contract asks, and CUDA gives). ATen's CPU add rounds the scalar to
// the tensor's dtype first (its mul and div do not). Unverified on Ascend.
template <at::Tensor& (*aten_out)(at::Tensor&, const at::Tensor&,
                                  const at::Scalar&, const at::Scalar&)>
at::Tensor& in_float_math(at::Tensor& out, const at::Tensor& self,
                          const at::Scalar& other, const at::Scalar& alpha) {
  if (!at::isReducedFloatingType(self.scalar_type())) {
    return aten_out(out, self, other, alpha);
  }
  at::Tensor wide = at::empty(self.sizes(), self.options().dtype(at::kFloat));
  aten_out(wide, self.to(at::kFloat), other, alpha);
  return out.copy_(wide);
}

// Scalar forms (aclnnAdds, aclnnMuls, aclnnEqScalar, ...): other is a host
// scalar; with an alpha, out = self op alpha * other.
#define EMULATOR_ALPHA_SCALAR_BINARY(Name, aten_out)                         \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                            \
      const aclTensor* self, const aclScalar* other, const aclScalar* alpha, \
      aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {   \
    Plan plan(#Name);                                                        \
    auto a = plan.required(self), o = plan.required(out);                    \
    auto b = plan.scalar(other), s = plan.scalar(alpha);                     \
    return plan.finish(workspaceSize, executor, 0,                           \
                       [=]() mutable { aten_out(o, a, b, s); });             \
  }                                                                          \
  EMULATOR_LAUNCH(Name)

#define EMULATOR_SCALAR_BINARY(Name, aten_out)                       \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                    \
      const aclTensor* self, const aclScalar* other, aclTensor* out, \
      uint64_t* workspaceSize, aclOpExecutor** executor) {           \
    Plan plan(#Name);                                                \
    auto a = plan.required(self), o = plan.required(out);            \
    auto b = plan.scalar(other);                                     \
    return plan.finish(workspaceSize, executor, 0,                   \
                       [=]() mutable { aten_out(o, a, b); });        \
  }                                                                  \
  EMULATOR_LAUNCH(Name)

// out = op(self).
#define EMULATOR_UNARY(Name, aten_out)                                \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                     \
      const aclTensor* self, aclTensor* out, uint64_t* workspaceSize, \
      aclOpExecutor** executor) {                                     \
    Plan plan(#Name);                                                 \
    auto a = plan.required(self), o = plan.required(out);             \
    return plan.finish(workspaceSize, executor, 0,                    \
                       [=]() mutable { aten_out(o, a); });            \
  }                                                                   \
  EMULATOR_LAUNCH(Name)
