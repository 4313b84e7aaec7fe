// ATen kernels for element-wise ops, over the backend's device kernels.
//
// The generic work is ATen's own: each op's structured meta class (the one
// torchgen generates, e.g. at::meta::structured_add_Tensor) builds a
// TensorIterator that decides the result dtype, broadcasts, checks devices
// and shapes, and asks for its output through set_output_raw_strided, which
// the three wrappers below answer the way PyTorch's generated in-tree
// registrations do: allocate (functional), resize out= (out), or check the
// self tensor (in-place). The iterator's coalesced shape and strides become
// the backend's TensorViews. One template serves every row of the op table:
// the wrappers' signatures come from the meta function's.

// First: c10/core/OptionalRef.h uses its assert macros without including them.
#include <c10/util/Exception.h>

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/ops/add_meta.h>
#include <ATen/ops/addcdiv_meta.h>
#include <ATen/ops/addcmul_meta.h>
#include <ATen/ops/clamp_max_meta.h>
#include <ATen/ops/clamp_min_meta.h>
#include <ATen/ops/cos_meta.h>
#include <ATen/ops/div_meta.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/eq_meta.h>
#include <ATen/ops/erf_meta.h>
#include <ATen/ops/exp_meta.h>
#include <ATen/ops/ge_meta.h>
#include <ATen/ops/gelu_backward_meta.h>
#include <ATen/ops/gelu_meta.h>
#include <ATen/ops/gt_meta.h>
#include <ATen/ops/le_meta.h>
#include <ATen/ops/lerp_meta.h>
#include <ATen/ops/log_meta.h>
#include <ATen/ops/lt_meta.h>
#include <ATen/ops/maximum_meta.h>
#include <ATen/ops/minimum_meta.h>
#include <ATen/ops/mul_meta.h>
#include <ATen/ops/ne_meta.h>
#include <ATen/ops/neg_meta.h>
#include <ATen/ops/pow_meta.h>
#include <ATen/ops/reciprocal_meta.h>
#include <ATen/ops/rsqrt_meta.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sigmoid_backward_meta.h>
#include <ATen/ops/sigmoid_meta.h>
#include <ATen/ops/silu_backward_meta.h>
#include <ATen/ops/silu_meta.h>
#include <ATen/ops/sin_meta.h>
#include <ATen/ops/sqrt_meta.h>
#include <ATen/ops/sub_meta.h>
#include <ATen/ops/tanh_backward_meta.h>
#include <ATen/ops/tanh_meta.h>
#include <ATen/ops/threshold_backward_meta.h>
#include <ATen/ops/zero_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ElementwiseMeta.h"
#include "KernelTable.h"
#include "Launch.h"
#include "OpTable.h"
#include "Structured.h"

namespace torch_backend {
namespace {

using at::Tensor;
using at::TensorIteratorBase;

enum class DtypeRule { Common, Comparison, Where, Output };

// A row's runtime state: its kernel and its overloads' handles, for the
// boxed fallback of calls the kernel declines (a dtype it lacks).
struct ElementwiseOp {
  const char* kernel_name = nullptr;
  DtypeRule rule = DtypeRule::Common;
  ElementwiseKernel kernel = nullptr;
  std::optional<c10::OperatorHandle> functional, out, inplace;
};

// The op's non-tensor arguments, gathered in schema order.
struct Arguments {
  std::vector<std::optional<c10::Scalar>> scalars;
  std::string variant;  // "_tanh" for approximate='tanh'
  bool reversed_inputs = false;
};
void gather_argument(Arguments&, const Tensor&) {}
void gather_argument(Arguments& args, const c10::Scalar& value) {
  args.scalars.emplace_back(value);
}
void gather_argument(Arguments& args, const std::optional<c10::Scalar>& value) {
  args.scalars.push_back(value);
}
void gather_argument(Arguments& args, c10::string_view value) {
  if (value != "none") {
    args.variant = "_" + std::string(value);
  }
}

at::ScalarType compute_dtype(TensorIteratorBase& iter, DtypeRule rule) {
  return rule == DtypeRule::Where || rule == DtypeRule::Output
             ? iter.dtype(0)
             : iter.common_dtype();
}

at::ScalarType expected_dtype(DtypeRule rule, int operand,
                              at::ScalarType compute) {
  if ((rule == DtypeRule::Comparison && operand == 0) ||
      (rule == DtypeRule::Where && operand == 1)) {
    return at::kBool;
  }
  return compute;
}

// Arithmetic computes in the math type (float for float16): its Python
// number operands are read in it. Comparisons and where() in the dtype.
bool is_arithmetic(DtypeRule rule) {
  return rule == DtypeRule::Common || rule == DtypeRule::Output;
}

// Whether the op reads its CPU scalar operands as given (number_as_given),
// not as TensorIterator's promotion rounded them to `compute`: arithmetic on
// float16 and bfloat16, as CUDA's and the CPU's kernels do
// (original_scalar_value in the math type).
bool reads_number_as_given(DtypeRule rule, at::ScalarType compute) {
  return is_arithmetic(rule) && at::isReducedFloatingType(compute);
}

// Kernels get their inputs in schema order. ATen's meta function for
// threshold_backward adds them to the iterator the other way round.
bool iterator_reverses_inputs(const char* kernel_name) {
  return std::strcmp(kernel_name, "threshold_backward") == 0;
}

// The CPU scalar operand `arg` (a wrapped Python number or a 0-dim CPU
// tensor) as a Scalar, read without an op call.
c10::Scalar cpu_operand(const TensorIteratorBase& iter, int arg) {
  c10::Scalar value;
  AT_DISPATCH_ALL_TYPES_AND3(
      at::kHalf, at::kBFloat16, at::kBool, iter.dtype(arg), "cpu_operand",
      [&] { value = *static_cast<const scalar_t*>(iter.data_ptr(arg)); });
  return value;
}

// The CPU scalar operand `arg` before TensorIterator's promotion.
c10::Scalar number_as_given(TensorIteratorBase& iter, int arg) {
  return iter.original_scalar_value<double>(arg);
}

// Calls `kernel` on an iterator whose operands already have the dtypes the
// kernel expects, but for CPU scalars, which travel as values.
bool launch(TensorIteratorBase& iter, at::ScalarType compute, DtypeRule rule,
            ElementwiseKernel kernel, const Arguments& args) {
  ElementwiseCall call;
  call.out = view_of(iter, 0);
  call.num_inputs = iter.ntensors() - 1;
  TORCH_INTERNAL_ASSERT(call.num_inputs <= kMaxElementwiseInputs);
  for (int i = 0; i < call.num_inputs; ++i) {
    if (iter.is_cpu_scalar(i + 1)) {  // declared in the compute dtype
      set_scalar_input(
          call, i, *kernel_dtype(compute),
          reads_number_as_given(rule, compute)
              ? opmath_scalar(number_as_given(iter, i + 1), compute)
              : cast_scalar(cpu_operand(iter, i + 1), compute));
    } else {
      call.inputs[i] = view_of(iter, i + 1);
    }
  }
  if (args.reversed_inputs) {
    std::reverse(call.inputs, call.inputs + call.num_inputs);
    std::reverse(call.scalar_inputs, call.scalar_inputs + call.num_inputs);
    std::reverse(call.input_values, call.input_values + call.num_inputs);
  }
  call.num_scalars = static_cast<int32_t>(args.scalars.size());
  TORCH_INTERNAL_ASSERT(call.num_scalars <= kMaxElementwiseScalars);
  for (int i = 0; i < call.num_scalars; ++i) {
    if (args.scalars[i]) {
      call.scalars[i] = scalar_value(*args.scalars[i], compute);
    } else {
      call.scalars[i].is_none = true;
    }
  }
  return kernel_ran(kernel(kernel_context(iter.device(0)), call));
}

bool has_cpu_scalar(const TensorIteratorBase& iter) {
  for (int i = 1; i < iter.ntensors(); ++i) {
    if (iter.is_cpu_scalar(i)) {
      return true;
    }
  }
  return false;
}

// How CPU scalar operands reach the kernel.
enum class Scalars { AsValues, AsDeviceTensors };

// Runs `iter` through `kernel` after giving its operands the dtypes the
// kernel expects: each input converted on the device (CPU scalars kept as
// values, or filled into device tensors), the output through a temporary
// when its dtype differs.
bool run_converted(TensorIteratorBase& iter, DtypeRule rule,
                   at::ScalarType compute, ElementwiseKernel kernel,
                   const Arguments& args, Scalars scalars) {
  const Tensor& out = iter.tensor(0);
  const c10::Device device = out.device();
  const at::ScalarType out_dtype = expected_dtype(rule, 0, compute);
  const bool typed_out = iter.dtype(0) == out_dtype;
  const Tensor result = typed_out
                            ? out
                            : at::empty_strided(out.sizes(), out.strides(),
                                                out.options().dtype(out_dtype));
  const int operands = iter.ntensors();
  std::vector<Tensor> inputs;
  inputs.reserve(operands);  // the config borrows them: no reallocation
  at::TensorIteratorConfig config;
  config.set_check_mem_overlap(false)
      .check_all_same_dtype(false)
      .allow_cpu_scalars(true)
      .resize_outputs(false)
      .add_output(result);
  for (int i = 1; i < operands; ++i) {
    const at::ScalarType dtype = expected_dtype(rule, i, compute);
    if (!iter.is_cpu_scalar(i)) {
      inputs.push_back(iter.tensor(i).to(device, dtype));
    } else if (scalars == Scalars::AsValues) {
      // Read by launch(); as given where the op reads it so.
      inputs.push_back(
          reads_number_as_given(rule, compute)
              ? at::scalar_tensor(number_as_given(iter, i),
                                  at::TensorOptions().dtype(at::kDouble))
              : iter.tensor(i));
    } else {
      // Filled in on the device (the fill kernel, enqueued) rather than
      // copied up, which would wait for the copy.
      // As the op computes with it: float16 arithmetic reads the number as
      // given (into a float tensor: run_elementwise); anything else converts
      // as a cast does (`uint8_x + 300` wraps).
      const c10::Scalar value =
          reads_number_as_given(rule, compute_dtype(iter, rule))
              ? number_as_given(iter, i)
              : iter.tensor(i).to(dtype).item();
      inputs.push_back(at::scalar_tensor(value, out.options().dtype(dtype)));
    }
    config.add_const_input(inputs.back());
  }
  auto converted = config.build();
  if (!launch(converted, compute, rule, kernel, args)) {
    return false;
  }
  if (!typed_out) {
    out.copy_(result);
  }
  return true;
}

// Runs a built iterator through `kernel`, CPU scalars as values; a kernel
// that declines those gets them again as device tensors. Returns false when
// the backend declined (the caller then falls back).
bool run_elementwise(TensorIteratorBase& iter, DtypeRule rule,
                     ElementwiseKernel kernel, const Arguments& args) {
  if (iter.numel() == 0) {
    return true;
  }
  const at::ScalarType compute = compute_dtype(iter, rule);
  if (!kernel_dtype(compute)) {
    return false;
  }
  c10::DeviceGuard guard(iter.device(0));
  bool typed = true;
  for (int i = 0; i < iter.ntensors(); ++i) {
    typed = typed && (iter.dtype(i) == expected_dtype(rule, i, compute) ||
                      (i > 0 && iter.is_cpu_scalar(i)));
  }
  const bool ran = typed ? launch(iter, compute, rule, kernel, args)
                         : run_converted(iter, rule, compute, kernel, args,
                                         Scalars::AsValues);
  // Arithmetic on float16 and bfloat16 then runs in float: a float16 tensor
  // cannot hold the number as the op computes with it.
  const at::ScalarType filled_compute =
      is_arithmetic(rule) ? at::toOpMathType(compute) : compute;
  return ran || (has_cpu_scalar(iter) &&
                 run_converted(iter, rule, filled_compute, kernel, args,
                               Scalars::AsDeviceTensors));
}

// The kernel for this call: the row's, or a string argument's variant.
ElementwiseKernel kernel_for(const ElementwiseOp& op, const Arguments& args) {
  return args.variant.empty()
             ? op.kernel
             : elementwise_kernel(op.kernel_name + args.variant);
}

bool run(const ElementwiseOp& op, TensorIteratorBase& iter, Arguments& args) {
  ElementwiseKernel kernel = kernel_for(op, args);
  args.reversed_inputs = iterator_reverses_inputs(op.kernel_name);
  return kernel != nullptr && run_elementwise(iter, op.rule, kernel, args);
}

template <class Meta, class Signature>
struct Wrappers;

// Functional, out= and in-place kernels of one row, with the op's own
// signature: the meta function's, out= last, in-place on a mutable self.
template <class Meta, class... Rest>
struct Wrappers<Meta, void (Meta::*)(const Tensor&, Rest...)> {
  template <const ElementwiseOp* Op>
  static Tensor functional(const Tensor& self, Rest... rest) {
    Functional<Meta> iter;
    iter.meta(self, rest...);
    Arguments args;
    (gather_argument(args, rest), ...);
    if (run(*Op, iter, args)) {
      return iter.outputs_[0];
    }
    torch::jit::Stack stack{boxed(self), boxed(rest)...};
    fall_back(*Op->functional, stack);
    return stack.back().toTensor();
  }

  template <const ElementwiseOp* Op>
  static Tensor& out(const Tensor& self, Rest... rest, Tensor& out) {
    Out<Meta> iter(out);
    iter.meta(self, rest...);
    Arguments args;
    (gather_argument(args, rest), ...);
    if (!run(*Op, iter, args)) {
      torch::jit::Stack stack{boxed(self), boxed(rest)..., out};
      fall_back(*Op->out, stack);
    }
    return out;
  }

  template <const ElementwiseOp* Op>
  static Tensor& inplace(Tensor& self, Rest... rest) {
    InPlace<Meta> iter(self);
    iter.meta(self, rest...);
    Arguments args;
    (gather_argument(args, rest), ...);
    if (!run(*Op, iter, args)) {
      torch::jit::Stack stack{boxed(self), boxed(rest)...};
      fall_back(*Op->inplace, stack);
    }
    return self;
  }
};

template <class Meta>
using WrappersOf = Wrappers<Meta, decltype(&Meta::meta)>;

#define TORCH_BACKEND_ELEMENTWISE_STATE(id, kernel, Meta, functional, out, \
                                        inplace, rule)                     \
  ElementwiseOp id##_op;
TORCH_BACKEND_ELEMENTWISE_OPS(TORCH_BACKEND_ELEMENTWISE_STATE)
#undef TORCH_BACKEND_ELEMENTWISE_STATE

}  // namespace

std::vector<std::string> register_elementwise_kernels(torch::Library& aten) {
  std::vector<std::string> registered;
  const auto add = [&](const char* name, auto fn) {
    impl_if_listed(aten, registered, name, fn);
  };
  const auto handle = &find_optional_op;
#define TORCH_BACKEND_REGISTER_ELEMENTWISE(id, kernel_name, Meta, fn_name, \
                                           out_name, inplace_name, rule)   \
  if (ElementwiseKernel kernel = elementwise_kernel(#kernel_name)) {       \
    using Impl = WrappersOf<Meta>;                                         \
    id##_op = {#kernel_name,    DtypeRule::rule,  kernel,                  \
               handle(fn_name), handle(out_name), handle(inplace_name)};   \
    add(fn_name, TORCH_FN(Impl::template functional<&id##_op>));           \
    add(out_name, TORCH_FN(Impl::template out<&id##_op>));                 \
    add(inplace_name, TORCH_FN(Impl::template inplace<&id##_op>));         \
  }
  TORCH_BACKEND_ELEMENTWISE_OPS(TORCH_BACKEND_REGISTER_ELEMENTWISE)
#undef TORCH_BACKEND_REGISTER_ELEMENTWISE
  if (elementwise_kernel("fill") != nullptr) {
    // PyTorch's zero_ is fill_(0) for every device but the CPU's fast path.
    add("zero_", TORCH_FN(at::native::zero_));
  }
  return registered;
}

}  // namespace torch_backend
