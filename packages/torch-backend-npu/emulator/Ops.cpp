// The ACL emulator's operator library (libopapi.so): the aclnn operators
// torch-backend-npu maps its kernels to, computed on the host with ATen's CPU
// kernels over the emulated device memory. Each follows aclnn's two phases:
// XxxGetWorkspaceSize checks and captures the call in an executor and says
// how much workspace it needs; Xxx checks the workspace it is given and
// enqueues the computation on the stream.
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

EMULATOR_ALPHA_BINARY(aclnnAdd, at::add_out)
EMULATOR_ALPHA_BINARY(aclnnSub, at::sub_out)
EMULATOR_BINARY(aclnnMul, at::mul_out)
EMULATOR_BINARY(aclnnDiv, at::div_out)
EMULATOR_BINARY(aclnnMaximum, at::maximum_out)
EMULATOR_BINARY(aclnnMinimum, at::minimum_out)
EMULATOR_BINARY(aclnnEqTensor, at::eq_out)
EMULATOR_BINARY(aclnnNeTensor, at::ne_out)
EMULATOR_BINARY(aclnnLtTensor, at::lt_out)
EMULATOR_BINARY(aclnnLeTensor, at::le_out)
EMULATOR_BINARY(aclnnGtTensor, at::gt_out)
EMULATOR_BINARY(aclnnGeTensor, at::ge_out)
EMULATOR_ALPHA_SCALAR_BINARY(aclnnAdds, in_float_math<at::add_out>)
EMULATOR_ALPHA_SCALAR_BINARY(aclnnSubs, in_float_math<at::sub_out>)
EMULATOR_SCALAR_BINARY(aclnnMuls, at::mul_out)
EMULATOR_SCALAR_BINARY(aclnnDivs, at::div_out)
EMULATOR_SCALAR_BINARY(aclnnEqScalar, at::eq_out)
EMULATOR_SCALAR_BINARY(aclnnNeScalar, at::ne_out)
EMULATOR_SCALAR_BINARY(aclnnLtScalar, at::lt_out)
EMULATOR_SCALAR_BINARY(aclnnLeScalar, at::le_out)
EMULATOR_SCALAR_BINARY(aclnnGtScalar, at::gt_out)
EMULATOR_SCALAR_BINARY(aclnnGeScalar, at::ge_out)
EMULATOR_BINARY(aclnnPowTensorTensor, at::pow_out)
EMULATOR_SCALAR_BINARY(aclnnPowTensorScalar, at::pow_out)

EMULATOR_OP aclnnStatus aclnnPowScalarTensorGetWorkspaceSize(
    const aclScalar* self, const aclTensor* exponent, aclTensor* out,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnPowScalarTensor");
  auto base = plan.scalar(self);
  auto e = plan.required(exponent), o = plan.required(out);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { at::pow_out(o, base, e); });
}
EMULATOR_LAUNCH(aclnnPowScalarTensor)
EMULATOR_UNARY(aclnnExp, at::exp_out)
EMULATOR_UNARY(aclnnLog, at::log_out)
EMULATOR_UNARY(aclnnSqrt, at::sqrt_out)
EMULATOR_UNARY(aclnnRsqrt, at::rsqrt_out)
EMULATOR_UNARY(aclnnNeg, at::neg_out)
EMULATOR_UNARY(aclnnTanh, at::tanh_out)
EMULATOR_UNARY(aclnnSigmoid, at::sigmoid_out)
EMULATOR_UNARY(aclnnReciprocal, at::reciprocal_out)
EMULATOR_UNARY(aclnnSin, at::sin_out)
EMULATOR_UNARY(aclnnCos, at::cos_out)
EMULATOR_UNARY(aclnnSilu, at::silu_out)
EMULATOR_UNARY(aclnnErf, at::erf_out)

namespace {
void relu_into(at::Tensor& out, const at::Tensor& self) {
  out.copy_(at::relu(self));
}
void gelu_into(at::Tensor& out, const at::Tensor& self) {
  at::gelu_out(out, self);
}
void gelu_backward_into(at::Tensor& grad_input, const at::Tensor& grad_output,
                        const at::Tensor& self) {
  at::gelu_backward_out(grad_input, grad_output, self);
}
void tanh_backward_into(at::Tensor& grad_input, const at::Tensor& grad_output,
                        const at::Tensor& output) {
  at::tanh_backward_out(grad_input, grad_output, output);
}
}  // namespace

EMULATOR_UNARY(aclnnRelu, relu_into)
EMULATOR_UNARY(aclnnGelu, gelu_into)
EMULATOR_BINARY(aclnnGeluBackward, gelu_backward_into)
EMULATOR_BINARY(aclnnTanhBackward, tanh_backward_into)
EMULATOR_BINARY(aclnnSiluBackward, at::silu_backward_out)
EMULATOR_BINARY(aclnnSigmoidBackward, at::sigmoid_backward_out)

EMULATOR_OP aclnnStatus aclnnArangeGetWorkspaceSize(
    const aclScalar* start, const aclScalar* end, const aclScalar* step,
    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnArange");
  auto o = plan.required(out);
  auto first = plan.scalar(start), last = plan.scalar(end),
       by = plan.scalar(step);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    // Into a contiguous result of out's size (ATen's own size rule), then out.
    at::Tensor values = at::empty({o.numel()}, o.options());
    at::arange_out(values, first, last, by);
    o.copy_(values.view(o.sizes()));
  });
}
EMULATOR_LAUNCH(aclnnArange)

EMULATOR_OP aclnnStatus aclnnLerpGetWorkspaceSize(
    const aclTensor* self, const aclTensor* end, const aclTensor* weight,
    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnLerp");
  auto a = plan.required(self), b = plan.required(end),
       w = plan.required(weight), o = plan.required(out);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { at::lerp_out(o, a, b, w); });
}
EMULATOR_LAUNCH(aclnnLerp)

EMULATOR_OP aclnnStatus aclnnLerpsGetWorkspaceSize(
    const aclTensor* self, const aclTensor* end, const aclScalar* weight,
    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnLerps");
  auto a = plan.required(self), b = plan.required(end), o = plan.required(out);
  auto w = plan.scalar(weight);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { at::lerp_out(o, a, b, w); });
}
EMULATOR_LAUNCH(aclnnLerps)

EMULATOR_OP aclnnStatus aclnnInplaceMaskedFillScalarGetWorkspaceSize(
    aclTensor* selfRef, const aclTensor* mask, const aclScalar* value,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnInplaceMaskedFillScalar");
  auto dst = plan.required(selfRef), m = plan.required(mask);
  auto v = plan.scalar(value);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { dst.masked_fill_(m, v); });
}
EMULATOR_LAUNCH(aclnnInplaceMaskedFillScalar)

EMULATOR_OP aclnnStatus aclnnThresholdBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* self,
    const aclScalar* threshold, aclTensor* out, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnThresholdBackward");
  auto g = plan.required(gradOutput), a = plan.required(self),
       o = plan.required(out);
  auto t = plan.scalar(threshold);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { at::threshold_backward_out(o, g, a, t); });
}
EMULATOR_LAUNCH(aclnnThresholdBackward)

EMULATOR_OP aclnnStatus aclnnSWhereGetWorkspaceSize(
    const aclTensor* condition, const aclTensor* self, const aclTensor* other,
    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnSWhere");
  auto c = plan.required(condition), a = plan.required(self),
       b = plan.required(other), o = plan.required(out);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { at::where_out(o, c, a, b); });
}
EMULATOR_LAUNCH(aclnnSWhere)

// out = self + value * tensor1 (op) tensor2.
#define EMULATOR_POINTWISE(Name, aten_out)                              \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                       \
      const aclTensor* self, const aclTensor* tensor1,                  \
      const aclTensor* tensor2, const aclScalar* value, aclTensor* out, \
      uint64_t* workspaceSize, aclOpExecutor** executor) {              \
    Plan plan(#Name);                                                   \
    auto a = plan.required(self), t1 = plan.required(tensor1),          \
         t2 = plan.required(tensor2), o = plan.required(out);           \
    auto v = plan.scalar(value);                                        \
    return plan.finish(workspaceSize, executor, 0,                      \
                       [=]() mutable { aten_out(o, a, t1, t2, v); });   \
  }                                                                     \
  EMULATOR_LAUNCH(Name)

EMULATOR_POINTWISE(aclnnAddcmul, at::addcmul_out)
EMULATOR_POINTWISE(aclnnAddcdiv, at::addcdiv_out)

// ---- dropout: a bit mask drawn from (seed, offset), then applied ----------
// Bit i of the mask (byte i / 8, bit i % 8) keeps element i when a uniform
// draw for counter offset + i falls below 1 - prob. The emulator's own
// counter-based generator (CANN's is Philox): reproducible from seed and
// offset, as the real one is.
namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::int64_t mask_bytes(std::int64_t elements) {
  return (elements + 127) / 128 * 128 / 8;
}

void draw_mask(at::Tensor& bits, std::int64_t elements, double prob,
               std::uint64_t seed, std::uint64_t offset) {
  auto* out = bits.data_ptr<std::uint8_t>();
  std::memset(out, 0, bits.numel());
  const double keep = 1.0 - prob;
  for (std::int64_t i = 0; i < elements; ++i) {
    const std::uint64_t draw = mix(seed ^ mix(offset + i));
    const double u = static_cast<double>(draw >> 40) / 16777216.0;
    if (u < keep) {
      out[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
    }
  }
}

// Checks shared by both forms; the number of elements, or -1.
std::int64_t plan_mask(Plan& plan, const aclIntArray* shape, double prob,
                       aclDataType prob_dtype, const at::Tensor& bits) {
  std::int64_t elements = 1;
  for (const std::int64_t size : plan.ints(shape)) {
    elements *= size;
  }
  if (prob < 0 || prob > 1) {
    fail(ACLNN_ERR_PARAM_INVALID,
         "aclnnDropoutGenMask: prob must be in [0, 1]");
    return -1;
  }
  if (prob_dtype != ACL_FLOAT && prob_dtype != ACL_FLOAT16 &&
      prob_dtype != ACL_BF16) {
    fail(ACLNN_ERR_PARAM_INVALID,
         "aclnnDropoutGenMask: probDataType must be FLOAT, FLOAT16 or BF16");
    return -1;
  }
  if (bits.defined() && (bits.scalar_type() != at::kByte ||
                         bits.numel() != mask_bytes(elements))) {
    fail(ACLNN_ERR_PARAM_INVALID,
         "aclnnDropoutGenMask: out must be UINT8 of align(elements, 128) / 8 "
         "bytes");
    return -1;
  }
  return elements;
}

}  // namespace

EMULATOR_OP aclnnStatus aclnnDropoutGenMaskV2GetWorkspaceSize(
    const aclIntArray* shape, double prob, int64_t seed, int64_t offset,
    aclDataType probDataType, aclTensor* out, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnDropoutGenMaskV2");
  auto bits = plan.required(out);
  const std::int64_t elements =
      plan_mask(plan, shape, prob, probDataType, bits);
  if (elements < 0) {
    return ACLNN_ERR_PARAM_INVALID;
  }
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    draw_mask(bits, elements, prob, static_cast<std::uint64_t>(seed),
              static_cast<std::uint64_t>(offset));
  });
}
EMULATOR_LAUNCH(aclnnDropoutGenMaskV2)

EMULATOR_OP aclnnStatus aclnnDropoutGenMaskV2TensorGetWorkspaceSize(
    const aclIntArray* shape, double prob, const aclTensor* seedTensor,
    const aclTensor* offsetTensor, int64_t offset, aclDataType probDataType,
    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnDropoutGenMaskV2Tensor");
  auto bits = plan.required(out), seed = plan.required(seedTensor),
       base = plan.required(offsetTensor);
  const std::int64_t elements =
      plan_mask(plan, shape, prob, probDataType, bits);
  if (elements < 0) {
    return ACLNN_ERR_PARAM_INVALID;
  }
  if (seed.scalar_type() != at::kLong || seed.numel() != 1 ||
      base.scalar_type() != at::kLong || base.numel() != 1) {
    return fail(ACLNN_ERR_PARAM_INVALID,
                "aclnnDropoutGenMaskV2Tensor: seedTensor and offsetTensor "
                "must be INT64 of shape [1]");
  }
  // Seed and offset are read when the operator runs, not when it is planned.
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    draw_mask(bits, elements, prob,
              static_cast<std::uint64_t>(seed.item<int64_t>()),
              static_cast<std::uint64_t>(base.item<int64_t>() + offset));
  });
}
EMULATOR_LAUNCH(aclnnDropoutGenMaskV2Tensor)

EMULATOR_OP aclnnStatus aclnnDropoutDoMaskGetWorkspaceSize(
    const aclTensor* self, const aclTensor* mask, double prob, aclTensor* out,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnDropoutDoMask");
  auto a = plan.required(self), bits = plan.required(mask),
       o = plan.required(out);
  if (a.defined() && bits.defined() &&
      (bits.scalar_type() != at::kByte ||
       bits.numel() < mask_bytes(a.numel()) || !a.is_contiguous() ||
       !o.is_contiguous() || o.numel() != a.numel())) {
    return fail(ACLNN_ERR_PARAM_INVALID,
                "aclnnDropoutDoMask: contiguous self and out of one size, and "
                "a UINT8 mask of align(elements, 128) / 8 bytes");
  }
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    const auto* keep = bits.data_ptr<std::uint8_t>();
    const std::int64_t n = a.numel();
    at::Tensor kept = at::empty({n}, a.options().dtype(at::kFloat));
    float* k = kept.data_ptr<float>();
    const float scale =
        prob >= 1 ? 0.0f : static_cast<float>(1.0 / (1.0 - prob));
    for (std::int64_t i = 0; i < n; ++i) {
      k[i] = (keep[i / 8] >> (i % 8)) & 1u ? scale : 0.0f;
    }
    o.view({n}).copy_(at::mul(a.reshape({n}).to(at::kFloat), kept));
  });
}
EMULATOR_LAUNCH(aclnnDropoutDoMask)

EMULATOR_OP aclnnStatus aclnnInplaceCopyGetWorkspaceSize(
    aclTensor* selfRef, const aclTensor* src, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnInplaceCopy");
  auto dst = plan.required(selfRef), from = plan.required(src);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { dst.copy_(from); });
}
EMULATOR_LAUNCH(aclnnInplaceCopy)

EMULATOR_OP aclnnStatus aclnnInplaceFillScalarGetWorkspaceSize(
    aclTensor* selfRef, const aclScalar* value, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnInplaceFillScalar");
  auto dst = plan.required(selfRef);
  auto v = plan.scalar(value);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { dst.fill_(v); });
}
EMULATOR_LAUNCH(aclnnInplaceFillScalar)

EMULATOR_OP aclnnStatus aclnnBaddbmmGetWorkspaceSize(
    const aclTensor* self, const aclTensor* batch1, const aclTensor* batch2,
    const aclScalar* beta, const aclScalar* alpha, aclTensor* out,
    int8_t /*cubeMathType*/, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnBaddbmm");
  auto c = plan.required(self), a = plan.required(batch1),
       b = plan.required(batch2), o = plan.required(out);
  auto be = plan.scalar(beta), al = plan.scalar(alpha);
  // Computed aside first: self may be out itself (addmm_).
  return plan.finish(workspaceSize, executor, kScratch,
                     [=]() mutable { o.copy_(at::baddbmm(c, a, b, be, al)); });
}
EMULATOR_LAUNCH(aclnnBaddbmm)

EMULATOR_OP aclnnStatus aclnnReduceSumGetWorkspaceSize(
    const aclTensor* self, const aclIntArray* dims, bool keepDims,
    aclDataType dtype, aclTensor* out, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnReduceSum");
  auto a = plan.required(self), o = plan.required(out);
  auto d = plan.ints(dims);
  const auto type = aten_dtype(dtype);
  return plan.finish(workspaceSize, executor, kScratch,
                     [=]() mutable { at::sum_out(o, a, d, keepDims, type); });
}
EMULATOR_LAUNCH(aclnnReduceSum)

EMULATOR_OP aclnnStatus
aclnnMeanGetWorkspaceSize(const aclTensor* self, const aclIntArray* dim,
                          bool keepDim, aclDataType dtype, aclTensor* out,
                          uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnMean");
  auto a = plan.required(self), o = plan.required(out);
  auto d = plan.ints(dim);
  const auto type = aten_dtype(dtype);
  return plan.finish(workspaceSize, executor, kScratch,
                     [=]() mutable { at::mean_out(o, a, d, keepDim, type); });
}
EMULATOR_LAUNCH(aclnnMean)

#define EMULATOR_EXTREMUM(Name, aten_out)                                  \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                          \
      const aclTensor* self, const aclIntArray* dim, bool keepDim,         \
      aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) { \
    Plan plan(#Name);                                                      \
    auto a = plan.required(self), o = plan.required(out);                  \
    auto d = plan.ints(dim);                                               \
    return plan.finish(workspaceSize, executor, kScratch,                  \
                       [=]() mutable { aten_out(o, a, d, keepDim); });     \
  }                                                                        \
  EMULATOR_LAUNCH(Name)

EMULATOR_EXTREMUM(aclnnAmax, at::amax_out)
EMULATOR_EXTREMUM(aclnnAmin, at::amin_out)

#define EMULATOR_SOFTMAX(Name, aten_out)                               \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                      \
      const aclTensor* self, int64_t dim, aclTensor* out,              \
      uint64_t* workspaceSize, aclOpExecutor** executor) {             \
    Plan plan(#Name);                                                  \
    auto a = plan.required(self), o = plan.required(out);              \
    return plan.finish(workspaceSize, executor, kScratch,              \
                       [=]() mutable { aten_out(o, a, dim, false); }); \
  }                                                                    \
  EMULATOR_LAUNCH(Name)

#define EMULATOR_SOFTMAX_BACKWARD(Name, aten_out)                          \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                          \
      const aclTensor* gradOutput, const aclTensor* output, int64_t dim,   \
      aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) { \
    Plan plan(#Name);                                                      \
    auto g = plan.required(gradOutput), y = plan.required(output),         \
         o = plan.required(out);                                           \
    return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {  \
      aten_out(o, g, y, dim, y.scalar_type());                             \
    });                                                                    \
  }                                                                        \
  EMULATOR_LAUNCH(Name)

EMULATOR_SOFTMAX(aclnnSoftmax, at::_softmax_out)
EMULATOR_SOFTMAX(aclnnLogSoftmax, at::_log_softmax_out)
EMULATOR_SOFTMAX_BACKWARD(aclnnSoftmaxBackward, at::_softmax_backward_data_out)
EMULATOR_SOFTMAX_BACKWARD(aclnnLogSoftmaxBackward,
                          at::_log_softmax_backward_data_out)

EMULATOR_OP aclnnStatus aclnnNLLLossGetWorkspaceSize(
    const aclTensor* self, const aclTensor* target, const aclTensor* weight,
    int64_t reduction, int64_t ignoreIndex, aclTensor* out,
    aclTensor* totalWeightOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnNLLLoss");
  auto x = plan.required(self), t = plan.required(target),
       w = plan.tensor(weight), o = plan.required(out),
       total = plan.required(totalWeightOut);
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    at::nll_loss_forward_out(o, total, x, t, w, reduction, ignoreIndex);
  });
}
EMULATOR_LAUNCH(aclnnNLLLoss)

EMULATOR_OP aclnnStatus aclnnNLLLossBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* self, const aclTensor* target,
    const aclTensor* weight, int64_t reduction, int64_t ignoreIndex,
    const aclTensor* totalWeight, aclTensor* out, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnNLLLossBackward");
  auto g = plan.required(gradOutput), x = plan.required(self),
       t = plan.required(target), w = plan.tensor(weight),
       total = plan.required(totalWeight), o = plan.required(out);
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    at::nll_loss_backward_out(o, g, x, t, w, reduction, ignoreIndex, total);
  });
}
EMULATOR_LAUNCH(aclnnNLLLossBackward)

EMULATOR_OP aclnnStatus aclnnLayerNormGetWorkspaceSize(
    const aclTensor* input, const aclIntArray* normalizedShape,
    const aclTensor* weightOptional, const aclTensor* biasOptional, double eps,
    aclTensor* out, aclTensor* meanOutOptional, aclTensor* rstdOutOptional,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnLayerNorm");
  auto x = plan.required(input), w = plan.tensor(weightOptional),
       b = plan.tensor(biasOptional), o = plan.required(out),
       mean = plan.tensor(meanOutOptional), rstd = plan.tensor(rstdOutOptional);
  auto shape = plan.ints(normalizedShape);
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    auto [y, m, r] = at::native_layer_norm(x, shape, w, b, eps);
    o.copy_(y);
    if (mean.defined()) {
      mean.copy_(m.reshape(mean.sizes()));
    }
    if (rstd.defined()) {
      rstd.copy_(r.reshape(rstd.sizes()));
    }
  });
}
EMULATOR_LAUNCH(aclnnLayerNorm)

EMULATOR_OP aclnnStatus aclnnLayerNormBackwardGetWorkspaceSize(
    const aclTensor* gradOut, const aclTensor* input,
    const aclIntArray* normalizedShape, const aclTensor* mean,
    const aclTensor* rstd, const aclTensor* weightOptional,
    const aclTensor* biasOptional, const aclBoolArray* outputMask,
    aclTensor* gradInputOut, aclTensor* gradWeightOut, aclTensor* gradBiasOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnLayerNormBackward");
  auto g = plan.required(gradOut), x = plan.required(input),
       m = plan.required(mean), r = plan.required(rstd),
       w = plan.tensor(weightOptional), b = plan.tensor(biasOptional),
       gx = plan.tensor(gradInputOut), gw = plan.tensor(gradWeightOut),
       gb = plan.tensor(gradBiasOut);
  auto shape = plan.ints(normalizedShape);
  std::array<bool, 3> mask = {true, true, true};
  if (outputMask != nullptr && outputMask->values.size() == 3) {
    mask = {outputMask->values[0], outputMask->values[1],
            outputMask->values[2]};
  }
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    // ATen's kernel takes mean and rstd with the normalised dims kept as 1s.
    std::vector<int64_t> stats_shape(
        x.sizes().begin(),
        x.sizes().end() - static_cast<int64_t>(shape.size()));
    stats_shape.resize(x.dim(), 1);
    // ATen's kernel shapes grad_bias after bias, which aclnn does not need.
    const at::Tensor bias =
        b.defined() || !mask[2] ? b : at::empty(gb.sizes(), gb.options());
    auto [dx, dw, db] =
        at::native_layer_norm_backward(g, x, shape, m.reshape(stats_shape),
                                       r.reshape(stats_shape), w, bias, mask);
    if (mask[0] && gx.defined()) {
      gx.copy_(dx);
    }
    if (mask[1] && gw.defined()) {
      gw.copy_(dw);
    }
    if (mask[2] && gb.defined()) {
      gb.copy_(db);
    }
  });
}
EMULATOR_LAUNCH(aclnnLayerNormBackward)

EMULATOR_OP aclnnStatus aclnnBatchNormGetWorkspaceSize(
    const aclTensor* input, const aclTensor* weight, const aclTensor* bias,
    aclTensor* runningMean, aclTensor* runningVar, bool training,
    double momentum, double eps, aclTensor* output, aclTensor* saveMean,
    aclTensor* saveInvstd, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnBatchNorm");
  auto x = plan.required(input), w = plan.tensor(weight), b = plan.tensor(bias),
       rm = plan.tensor(runningMean), rv = plan.tensor(runningVar),
       o = plan.required(output), sm = plan.tensor(saveMean),
       si = plan.tensor(saveInvstd);
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    // Updates the running statistics in place, as aclnn does.
    auto [y, mean, invstd] =
        at::native_batch_norm(x, w, b, rm, rv, training, momentum, eps);
    o.copy_(y);
    if (sm.defined() && mean.numel() == sm.numel()) {
      sm.copy_(mean);
    }
    if (si.defined() && invstd.numel() == si.numel()) {
      si.copy_(invstd);
    }
  });
}
EMULATOR_LAUNCH(aclnnBatchNorm)

EMULATOR_OP aclnnStatus aclnnBatchNormBackwardGetWorkspaceSize(
    const aclTensor* gradOut, const aclTensor* input, const aclTensor* weight,
    const aclTensor* runningMean, const aclTensor* runningVar,
    const aclTensor* saveMean, const aclTensor* saveInvstd, bool training,
    double eps, const aclBoolArray* outputMask, aclTensor* gradInput,
    aclTensor* gradWeight, aclTensor* gradBias, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnBatchNormBackward");
  auto g = plan.required(gradOut), x = plan.required(input),
       w = plan.tensor(weight), rm = plan.tensor(runningMean),
       rv = plan.tensor(runningVar), sm = plan.tensor(saveMean),
       si = plan.tensor(saveInvstd), gx = plan.tensor(gradInput),
       gw = plan.tensor(gradWeight), gb = plan.tensor(gradBias);
  std::array<bool, 3> mask = {gx.defined(), gw.defined(), gb.defined()};
  if (outputMask != nullptr && outputMask->values.size() == 3) {
    mask = {outputMask->values[0], outputMask->values[1],
            outputMask->values[2]};
  }
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    auto [dx, dw, db] = at::native_batch_norm_backward(g, x, w, rm, rv, sm, si,
                                                       training, eps, mask);
    if (mask[0] && gx.defined()) {
      gx.copy_(dx);
    }
    if (mask[1] && gw.defined()) {
      gw.copy_(dw);
    }
    if (mask[2] && gb.defined()) {
      gb.copy_(db);
    }
  });
}
EMULATOR_LAUNCH(aclnnBatchNormBackward)

// out = self gathered along dim by index (index_select, gather).
#define EMULATOR_GATHER(Name, aten_op)                                     \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                          \
      const aclTensor* self, int64_t dim, const aclTensor* index,          \
      aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) { \
    Plan plan(#Name);                                                      \
    auto a = plan.required(self), i = plan.required(index),                \
         o = plan.required(out);                                           \
    return plan.finish(workspaceSize, executor, 0,                         \
                       [=]() mutable { o.copy_(aten_op(a, dim, i)); });    \
  }                                                                        \
  EMULATOR_LAUNCH(Name)

EMULATOR_GATHER(aclnnIndexSelect, at::index_select)
EMULATOR_GATHER(aclnnGather, at::gather)

// Computed aside first: self may be out itself (core accumulates in place).
EMULATOR_OP aclnnStatus aclnnScatterAddGetWorkspaceSize(
    const aclTensor* self, int64_t dim, const aclTensor* index,
    const aclTensor* src, aclTensor* out, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnScatterAdd");
  auto a = plan.required(self), i = plan.required(index),
       s = plan.required(src), o = plan.required(out);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { o.copy_(at::scatter_add(a, dim, i, s)); });
}
EMULATOR_LAUNCH(aclnnScatterAdd)

EMULATOR_OP aclnnStatus aclnnIndexAddGetWorkspaceSize(
    const aclTensor* self, int64_t dim, const aclTensor* index,
    const aclTensor* source, const aclScalar* alpha, aclTensor* out,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnIndexAdd");
  auto a = plan.required(self), i = plan.required(index),
       s = plan.required(source), o = plan.required(out);
  auto scale = plan.scalar(alpha);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    o.copy_(at::index_add(a, dim, i, s, scale));
  });
}
EMULATOR_LAUNCH(aclnnIndexAdd)

// Values and indices of the extremum along dim.
#define EMULATOR_ARG_EXTREMUM(Name, aten_op)                                   \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                              \
      const aclTensor* self, int64_t dim, bool keepdim, aclTensor* out,        \
      aclTensor* indices, uint64_t* workspaceSize, aclOpExecutor** executor) { \
    Plan plan(#Name);                                                          \
    auto a = plan.required(self), o = plan.required(out),                      \
         i = plan.required(indices);                                           \
    return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {      \
      auto [values, positions] = aten_op(a, dim, keepdim);                     \
      o.copy_(values);                                                         \
      i.copy_(positions);                                                      \
    });                                                                        \
  }                                                                            \
  EMULATOR_LAUNCH(Name)

EMULATOR_ARG_EXTREMUM(aclnnMaxDim, at::max)
EMULATOR_ARG_EXTREMUM(aclnnMinDim, at::min)

// ---- convolution and pooling
// ------------------------------------------------- Outputs must be contiguous
// (NCHW), as aclnn's are; inputs may be strided.
namespace {

bool contiguous_outputs(std::initializer_list<const at::Tensor*> outputs) {
  for (const at::Tensor* out : outputs) {
    if (out->defined() && !out->is_contiguous()) {
      return false;
    }
  }
  return true;
}

}  // namespace

EMULATOR_OP aclnnStatus aclnnConvolutionGetWorkspaceSize(
    const aclTensor* input, const aclTensor* weight, const aclTensor* bias,
    const aclIntArray* stride, const aclIntArray* padding,
    const aclIntArray* dilation, bool transposed,
    const aclIntArray* outputPadding, const int64_t groups, aclTensor* output,
    int8_t cubeMathType, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnConvolution");
  auto x = plan.required(input), w = plan.required(weight),
       b = plan.tensor(bias), o = plan.required(output);
  auto s = plan.ints(stride), p = plan.ints(padding), d = plan.ints(dilation),
       op = plan.ints(outputPadding);
  if (o.defined() && !contiguous_outputs({&o})) {
    return fail(ACLNN_ERR_PARAM_INVALID,
                "aclnnConvolution: output must be contiguous (NCHW)");
  }
  (void)cubeMathType;
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    o.copy_(at::convolution(x, w, b, s, p, d, transposed, op, groups));
  });
}
EMULATOR_LAUNCH(aclnnConvolution)

EMULATOR_OP aclnnStatus aclnnConvolutionBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* input,
    const aclTensor* weight, const aclIntArray* biasSizes,
    const aclIntArray* stride, const aclIntArray* padding,
    const aclIntArray* dilation, bool transposed,
    const aclIntArray* outputPadding, int groups,
    const aclBoolArray* outputMask, int8_t cubeMathType, aclTensor* gradInput,
    aclTensor* gradWeight, aclTensor* gradBias, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnConvolutionBackward");
  auto g = plan.required(gradOutput), x = plan.required(input),
       w = plan.required(weight), gx = plan.tensor(gradInput),
       gw = plan.tensor(gradWeight), gb = plan.tensor(gradBias);
  auto bias = plan.ints(biasSizes), s = plan.ints(stride),
       p = plan.ints(padding), d = plan.ints(dilation),
       op = plan.ints(outputPadding);
  std::array<bool, 3> mask = {true, true, true};
  if (outputMask != nullptr && outputMask->values.size() == 3) {
    mask = {outputMask->values[0], outputMask->values[1],
            outputMask->values[2]};
  }
  if ((mask[0] && !gx.defined()) || (mask[1] && !gw.defined()) ||
      (mask[2] && !gb.defined())) {
    return fail(
        ACLNN_ERR_PARAM_NULLPTR,
        "aclnnConvolutionBackward: an output the mask asks for is null");
  }
  if (!contiguous_outputs({&gx, &gw, &gb})) {
    return fail(ACLNN_ERR_PARAM_INVALID,
                "aclnnConvolutionBackward: outputs must be contiguous");
  }
  (void)cubeMathType;
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    auto [dx, dw, db] = at::convolution_backward(g, x, w, bias, s, p, d,
                                                 transposed, op, groups, mask);
    if (mask[0]) {
      gx.copy_(dx);
    }
    if (mask[1]) {
      gw.copy_(dw);
    }
    if (mask[2]) {
      gb.copy_(db);
    }
  });
}
EMULATOR_LAUNCH(aclnnConvolutionBackward)

EMULATOR_OP aclnnStatus aclnnMaxPool2dWithIndicesGetWorkspaceSize(
    const aclTensor* self, const aclIntArray* kernelSize,
    const aclIntArray* stride, const aclIntArray* padding,
    const aclIntArray* dilation, bool ceilMode, aclTensor* out,
    aclTensor* indices, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnMaxPool2dWithIndices");
  auto x = plan.required(self), o = plan.required(out),
       i = plan.required(indices);
  auto k = plan.ints(kernelSize), s = plan.ints(stride), p = plan.ints(padding),
       d = plan.ints(dilation);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    auto [values, where] = at::max_pool2d_with_indices(x, k, s, p, d, ceilMode);
    o.copy_(values);
    i.copy_(where);
  });
}
EMULATOR_LAUNCH(aclnnMaxPool2dWithIndices)

EMULATOR_OP aclnnStatus aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* self,
    const aclTensor* indices, const aclIntArray* kernelSize,
    const aclIntArray* stride, const aclIntArray* padding,
    const aclIntArray* dilation, bool ceilMode, aclTensor* gradInput,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnMaxPool2dWithIndicesBackward");
  auto g = plan.required(gradOutput), x = plan.required(self),
       i = plan.required(indices), gx = plan.required(gradInput);
  auto k = plan.ints(kernelSize), s = plan.ints(stride), p = plan.ints(padding),
       d = plan.ints(dilation);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    gx.copy_(at::max_pool2d_with_indices_backward(g, x, k, s, p, d, ceilMode,
                                                  i.to(at::kLong)));
  });
}
EMULATOR_LAUNCH(aclnnMaxPool2dWithIndicesBackward)

EMULATOR_OP aclnnStatus aclnnAvgPool2dGetWorkspaceSize(
    const aclTensor* self, const aclIntArray* kernelSize,
    const aclIntArray* strides, const aclIntArray* paddings, bool ceilMode,
    bool countIncludePad, int64_t divisorOverride, int8_t cubeMathType,
    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnAvgPool2d");
  auto x = plan.required(self), o = plan.required(out);
  auto k = plan.ints(kernelSize), s = plan.ints(strides),
       p = plan.ints(paddings);
  (void)cubeMathType;
  const std::optional<int64_t> divisor =
      divisorOverride == 0 ? std::nullopt
                           : std::optional<int64_t>(divisorOverride);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    o.copy_(at::avg_pool2d(x, k, s, p, ceilMode, countIncludePad, divisor));
  });
}
EMULATOR_LAUNCH(aclnnAvgPool2d)

EMULATOR_OP aclnnStatus aclnnAvgPool2dBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* self,
    const aclIntArray* kernelSize, const aclIntArray* stride,
    const aclIntArray* padding, bool ceilMode, bool countIncludePad,
    int64_t divisorOverride, int8_t cubeMathType, aclTensor* gradInput,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnAvgPool2dBackward");
  auto g = plan.required(gradOutput), x = plan.required(self),
       gx = plan.required(gradInput);
  auto k = plan.ints(kernelSize), s = plan.ints(stride), p = plan.ints(padding);
  (void)cubeMathType;
  const std::optional<int64_t> divisor =
      divisorOverride == 0 ? std::nullopt
                           : std::optional<int64_t>(divisorOverride);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    gx.copy_(at::avg_pool2d_backward(g, x, k, s, p, ceilMode, countIncludePad,
                                     divisor));
  });
}
EMULATOR_LAUNCH(aclnnAvgPool2dBackward)

EMULATOR_OP aclnnStatus aclnnAdaptiveAvgPool2dGetWorkspaceSize(
    const aclTensor* self, const aclIntArray* outputSize, aclTensor* out,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnAdaptiveAvgPool2d");
  auto x = plan.required(self), o = plan.required(out);
  auto size = plan.ints(outputSize);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    o.copy_(at::_adaptive_avg_pool2d(x, size));
  });
}
EMULATOR_LAUNCH(aclnnAdaptiveAvgPool2d)

EMULATOR_OP aclnnStatus aclnnAdaptiveAvgPool2dBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* self, aclTensor* gradInput,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnAdaptiveAvgPool2dBackward");
  auto g = plan.required(gradOutput), x = plan.required(self),
       gx = plan.required(gradInput);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    gx.copy_(at::_adaptive_avg_pool2d_backward(g, x));
  });
}
EMULATOR_LAUNCH(aclnnAdaptiveAvgPool2dBackward)
