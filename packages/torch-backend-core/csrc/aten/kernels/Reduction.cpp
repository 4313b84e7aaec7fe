// ATen kernels for reductions (sum, mean, amax, amin, var/std over any set
// of dims; max/min with indices and argmax/argmin along one),
// over the backend's reduction kernels. The op's structured meta class sizes
// the result and checks the arguments; ATen's make_reduction_from_out_ty
// builds the reduction TensorIterator the CPU kernel uses, whose output has
// stride 0 along the reduced dims and whose input is cast to the result
// dtype.
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/amax_meta.h>
#include <ATen/ops/amin_meta.h>
#include <ATen/ops/argmax_meta.h>
#include <ATen/ops/argmin_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max_meta.h>
#include <ATen/ops/mean_meta.h>
#include <ATen/ops/min_meta.h>
#include <ATen/ops/sum_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"
#include "Structured.h"

namespace torch_backend {
namespace {

using at::Tensor;

struct ReductionOp {
  ReductionKernel kernel = nullptr;
  std::optional<c10::OperatorHandle> functional, out;
  double empty_value = 0;  // the result of reducing nothing (sum: 0)
};

// Reduces `self` into the sized `result` over `dims`; false: declined.
bool run_reduction(const ReductionOp& op, const Tensor& self,
                   const Tensor& result, at::OptionalIntArrayRef dims,
                   bool keepdim) {
  if (!kernel_dtypes(self, result)) {
    return false;
  }
  c10::DeviceGuard guard(result.device());
  if (self.numel() == 0) {
    result.fill_(op.empty_value);
    return true;
  }
  auto iter = at::meta::make_reduction_from_out_ty(self, result, dims, keepdim,
                                                   result.scalar_type());
  if (iter.numel() == 0) {
    return true;
  }
  return kernel_ran(op.kernel(kernel_context(result.device()), view_of(iter, 0),
                              view_of(iter, 1)));
}

template <class Meta, class Signature>
struct Wrappers;

// sum/mean take (self, dim?, keepdim, dtype?), amax/amin (self, dim, keepdim).
template <class Meta, class Dims, class... Rest>
struct Wrappers<Meta, void (Meta::*)(const Tensor&, Dims, bool, Rest...)> {
  template <const ReductionOp* Op>
  static Tensor functional(const Tensor& self, Dims dims, bool keepdim,
                           Rest... rest) {
    Functional<Meta> meta;
    meta.meta(self, dims, keepdim, rest...);
    const Tensor& result = meta.outputs_[0];
    if (!run_reduction(*Op, self, result, dims, keepdim)) {
      torch::jit::Stack stack{self, boxed(dims), keepdim, boxed(rest)...};
      fall_back(*Op->functional, stack);
      return stack.back().toTensor();
    }
    return result;
  }

  template <const ReductionOp* Op>
  static Tensor& out(const Tensor& self, Dims dims, bool keepdim, Rest... rest,
                     Tensor& out) {
    Out<Meta> meta(out);
    meta.meta(self, dims, keepdim, rest...);
    if (!run_reduction(*Op, self, out, dims, keepdim)) {
      torch::jit::Stack stack{self, boxed(dims), keepdim, boxed(rest)..., out};
      fall_back(*Op->out, stack);
    }
    return out;
  }
};

#define TORCH_BACKEND_REDUCTION_STATE(id, Meta, functional, out, empty) \
  ReductionOp id##_op;
TORCH_BACKEND_REDUCTION_OPS(TORCH_BACKEND_REDUCTION_STATE)
#undef TORCH_BACKEND_REDUCTION_STATE

// max/min (values and indices) and argmax/argmin along one dim, or over
// everything (argmax without dim). Outputs sized by the meta class.
bool run_arg_reduction(const char* name, const Tensor* values,
                       const Tensor& indices, const Tensor& self,
                       std::optional<int64_t> dim, bool keepdim) {
  ArgReductionKernel kernel = arg_reduction_kernel(name);
  if (kernel == nullptr || !kernel_dtypes(self) ||
      (values != nullptr && values->scalar_type() != self.scalar_type())) {
    return false;
  }
  if (indices.numel() == 0) {
    return true;
  }
  c10::DeviceGuard guard(self.device());
  const bool whole = !dim.has_value() || self.dim() == 0;
  const Tensor input = whole ? self.reshape(-1) : self;
  const int64_t wrapped = whole ? 0 : at::maybe_wrap_dim(*dim, self.dim());
  // The outputs as views with size 1 along the reduced dim.
  const auto kept = [&](const Tensor& out) {
    return whole ? out.reshape({1}) : (keepdim ? out : out.unsqueeze(wrapped));
  };
  return kernel_ran(kernel(
      kernel_context(self.device()),
      values != nullptr ? view_of(kept(*values)) : TensorView{},
      view_of(kept(indices)), view_of(input), static_cast<int32_t>(wrapped)));
}

template <const char* Name, class DimMeta, class ArgMeta>
struct ArgReduction {
  inline static std::optional<c10::OperatorHandle> dim_op, dim_out_op, arg_op,
      arg_out_op;

  static std::tuple<Tensor, Tensor> with_values(const Tensor& self, int64_t dim,
                                                bool keepdim) {
    Functional<DimMeta> meta;
    meta.meta(self, dim, keepdim);
    auto& [values, indices] = meta.outputs_;
    if (run_arg_reduction(Name, &values, indices, self, dim, keepdim)) {
      return {values, indices};
    }
    torch::jit::Stack stack{self, dim, keepdim};
    fall_back(*dim_op, stack);
    return {stack[0].toTensor(), stack[1].toTensor()};
  }

  static std::tuple<Tensor&, Tensor&> with_values_out(const Tensor& self,
                                                      int64_t dim, bool keepdim,
                                                      Tensor& values,
                                                      Tensor& indices) {
    Out<DimMeta> meta(values, indices);
    meta.meta(self, dim, keepdim);
    if (!run_arg_reduction(Name, &values, indices, self, dim, keepdim)) {
      torch::jit::Stack stack{self, dim, keepdim, values, indices};
      fall_back(*dim_out_op, stack);
    }
    return {values, indices};
  }

  static Tensor index_only(const Tensor& self, std::optional<int64_t> dim,
                           bool keepdim) {
    Functional<ArgMeta> meta;
    meta.meta(self, dim, keepdim);
    if (run_arg_reduction(Name, nullptr, meta.outputs_[0], self, dim,
                          keepdim)) {
      return meta.outputs_[0];
    }
    torch::jit::Stack stack{self, dim, keepdim};
    fall_back(*arg_op, stack);
    return stack.back().toTensor();
  }

  static Tensor& index_only_out(const Tensor& self, std::optional<int64_t> dim,
                                bool keepdim, Tensor& out) {
    Out<ArgMeta> meta(out);
    meta.meta(self, dim, keepdim);
    if (!run_arg_reduction(Name, nullptr, out, self, dim, keepdim)) {
      torch::jit::Stack stack{self, dim, keepdim, out};
      fall_back(*arg_out_op, stack);
    }
    return out;
  }

  static void registered(torch::Library& aten, const std::string& name,
                         const std::string& out_name,
                         std::vector<std::string>& names) {
    dim_op = find_op((name + ".dim").c_str());
    dim_out_op = find_op((name + "." + out_name).c_str());
    arg_op = find_op(("arg" + name).c_str());
    arg_out_op = find_op(("arg" + name + ".out").c_str());
    for (const std::string& op : {name + ".dim", name + "." + out_name,
                                  "arg" + name, "arg" + name + ".out"}) {
      names.push_back(op);
    }
    register_kernel(aten, (name + ".dim").c_str(), TORCH_FN(with_values));
    register_kernel(aten, (name + "." + out_name).c_str(),
                    TORCH_FN(with_values_out));
    register_kernel(aten, ("arg" + name).c_str(), TORCH_FN(index_only));
    register_kernel(aten, ("arg" + name + ".out").c_str(),
                    TORCH_FN(index_only_out));
  }
};

// var/std, alone or with the mean, over a set of dims (all when none are
// given). Sized as ATen's CPU kernel sizes them; the backend's kernel writes
// through views with self's sizes and stride 0 along the reduced dims.
struct VarianceOps {
  c10::OperatorHandle var, var_out, var_mean, std, std_out, std_mean;
};
std::optional<VarianceOps> variance_ops;

std::vector<int64_t> reduced_shape(const Tensor& self,
                                   at::OptionalIntArrayRef dims, bool keepdim) {
  const auto mask = at::native::make_dim_mask(dims, self.dim());
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!mask[d]) {
      shape.push_back(self.size(d));
    } else if (keepdim) {
      shape.push_back(1);
    }
  }
  return shape;
}

// `result` (sized by reduced_shape) as a view with self's sizes.
Tensor spread(const Tensor& result, const Tensor& self,
              at::OptionalIntArrayRef dims) {
  const auto mask = at::native::make_dim_mask(dims, self.dim());
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < self.dim(); ++d) {
    kept.push_back(mask[d] ? 1 : self.size(d));
  }
  return result.view(kept).expand(self.sizes());
}

// false: declined (non-floating dtypes, empty input, no degrees of freedom,
// an out= of another dtype), for the fallback to answer as ATen does.
bool run_variance(const Tensor& self, const Tensor& var, const Tensor* mean,
                  at::OptionalIntArrayRef dims,
                  const std::optional<at::Scalar>& correction,
                  bool standard_deviation) {
  const VarianceKernel kernel = variance_kernel();
  if (kernel == nullptr || !at::isFloatingType(self.scalar_type()) ||
      !kernel_dtypes(self) || var.scalar_type() != self.scalar_type() ||
      (mean != nullptr && mean->scalar_type() != self.scalar_type()) ||
      self.numel() == 0) {
    return false;
  }
  const auto mask = at::native::make_dim_mask(dims, self.dim());
  int64_t folded = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    folded *= mask[d] ? self.size(d) : 1;
  }
  const double dof_correction =
      correction.has_value() ? correction->toDouble() : 1.0;
  if (static_cast<double>(folded) - dof_correction <= 0) {
    return false;  // ATen warns and returns inf/nan
  }
  c10::DeviceGuard guard(self.device());
  VarianceCall call;
  call.var = view_of(spread(var, self, dims));
  call.mean =
      mean != nullptr ? view_of(spread(*mean, self, dims)) : TensorView{};
  call.in = view_of(self);
  call.correction = dof_correction;
  call.standard_deviation = standard_deviation;
  return kernel_ran(kernel(kernel_context(self.device()), call));
}

template <bool kStd>
struct Variance {
  static const c10::OperatorHandle& op(bool out, bool with_mean) {
    if (with_mean) {
      return kStd ? variance_ops->std_mean : variance_ops->var_mean;
    }
    if (out) {
      return kStd ? variance_ops->std_out : variance_ops->var_out;
    }
    return kStd ? variance_ops->std : variance_ops->var;
  }

  static Tensor functional(const Tensor& self, at::OptionalIntArrayRef dims,
                           const std::optional<at::Scalar>& correction,
                           bool keepdim) {
    Tensor result =
        at::empty(reduced_shape(self, dims, keepdim), self.options());
    if (run_variance(self, result, nullptr, dims, correction, kStd)) {
      return result;
    }
    torch::jit::Stack stack{self, boxed(dims), boxed(correction), keepdim};
    fall_back(op(false, false), stack);
    return stack.back().toTensor();
  }

  static Tensor& out(const Tensor& self, at::OptionalIntArrayRef dims,
                     const std::optional<at::Scalar>& correction, bool keepdim,
                     Tensor& out) {
    TORCH_CHECK(out.device() == self.device(), "Expected out tensor to have ",
                "device ", self.device(), ", but got ", out.device(),
                " instead");
    if (out.scalar_type() == self.scalar_type()) {
      at::native::resize_output(out, reduced_shape(self, dims, keepdim));
      if (run_variance(self, out, nullptr, dims, correction, kStd)) {
        return out;
      }
    }
    torch::jit::Stack stack{self, boxed(dims), boxed(correction), keepdim, out};
    fall_back(op(true, false), stack);
    return out;
  }

  static std::tuple<Tensor, Tensor> with_mean(
      const Tensor& self, at::OptionalIntArrayRef dims,
      const std::optional<at::Scalar>& correction, bool keepdim) {
    const auto shape = reduced_shape(self, dims, keepdim);
    Tensor result = at::empty(shape, self.options());
    Tensor mean = at::empty(shape, self.options());
    if (run_variance(self, result, &mean, dims, correction, kStd)) {
      return {result, mean};
    }
    torch::jit::Stack stack{self, boxed(dims), boxed(correction), keepdim};
    fall_back(op(false, true), stack);
    return {stack[0].toTensor(), stack[1].toTensor()};
  }
};

constexpr char kMax[] = "max";
constexpr char kMin[] = "min";

}  // namespace

std::vector<std::string> register_reduction_kernels(torch::Library& aten) {
  std::vector<std::string> registered;
#define TORCH_BACKEND_REGISTER_REDUCTION(id, Meta, fn_name, out_name, empty) \
  if (ReductionKernel kernel = reduction_kernel(#id)) {                      \
    using Impl = Wrappers<Meta, decltype(&Meta::meta)>;                      \
    id##_op = {kernel, find_op(fn_name), find_op(out_name), empty};          \
    register_kernel(aten, fn_name,                                           \
                    TORCH_FN(Impl::template functional<&id##_op>));          \
    register_kernel(aten, out_name, TORCH_FN(Impl::template out<&id##_op>)); \
    registered.insert(registered.end(), {fn_name, out_name});                \
  }
  TORCH_BACKEND_REDUCTION_OPS(TORCH_BACKEND_REGISTER_REDUCTION)
#undef TORCH_BACKEND_REGISTER_REDUCTION
  if (variance_kernel() != nullptr) {
    variance_ops = VarianceOps{
        find_op("var.correction"),      find_op("var.correction_out"),
        find_op("var_mean.correction"), find_op("std.correction"),
        find_op("std.correction_out"),  find_op("std_mean.correction")};
    register_kernel(aten, "var.correction",
                    TORCH_FN(Variance<false>::functional));
    register_kernel(aten, "var.correction_out", TORCH_FN(Variance<false>::out));
    register_kernel(aten, "var_mean.correction",
                    TORCH_FN(Variance<false>::with_mean));
    register_kernel(aten, "std.correction",
                    TORCH_FN(Variance<true>::functional));
    register_kernel(aten, "std.correction_out", TORCH_FN(Variance<true>::out));
    register_kernel(aten, "std_mean.correction",
                    TORCH_FN(Variance<true>::with_mean));
    registered.insert(
        registered.end(),
        {"var.correction", "var.correction_out", "var_mean.correction",
         "std.correction", "std.correction_out", "std_mean.correction"});
  }
  if (arg_reduction_kernel("max") != nullptr) {
    ArgReduction<kMax, at::meta::structured_max_dim,
                 at::meta::structured_argmax>::registered(aten, "max",
                                                          "dim_max",
                                                          registered);
  }
  if (arg_reduction_kernel("min") != nullptr) {
    ArgReduction<kMin, at::meta::structured_min_dim,
                 at::meta::structured_argmin>::registered(aten, "min",
                                                          "dim_min",
                                                          registered);
  }
  return registered;
}

}  // namespace torch_backend
