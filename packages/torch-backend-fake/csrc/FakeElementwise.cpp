// fake's element-wise kernels (torch_backend/DeviceKernels.h): loops written
// here over the descriptors, enqueued on the stream core hands them, and their
// multi-tensor forms (a list enqueued as one stream item). Large floating
// add/sub go to ATen's vectorised CPU add, fake's "vector unit".
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <utility>

#include <ATen/ops/add.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <torch_backend/DeviceKernels.h>

#include "FakeDTypes.h"
#include "FakeHardware.h"
#include "HostTensor.h"

namespace {

using fake::Compute;
using fake::host_tensor;
using fake::visit_dtype;
using torch_backend::DType;
using torch_backend::ElementwiseCall;
using torch_backend::KernelContext;
using torch_backend::kNotSupported;
using torch_backend::kSuccess;
using torch_backend::ScalarValue;
using torch_backend::Status;
using torch_backend::TensorView;

// Calls fn(offsets) for every element, offsets[k] being the element's offset
// in views[k] (all views have the same sizes; dimension 0 is the innermost).
template <std::size_t N, typename Fn>
void for_each_offset(const std::array<const TensorView*, N>& views, Fn fn) {
  const TensorView& shape = *views[0];
  const std::int64_t n = shape.numel();
  if (n == 0) {
    return;
  }
  std::int64_t index[torch_backend::kMaxKernelDims] = {};
  std::array<std::int64_t, N> offsets;
  std::array<std::int64_t, N> inner_strides;
  for (std::size_t k = 0; k < N; ++k) {
    offsets[k] = views[k]->offset;
    inner_strides[k] = shape.dim > 0 ? views[k]->strides[0] : 0;
  }
  const std::int64_t inner = shape.dim > 0 ? shape.sizes[0] : 1;
  std::array<std::int64_t, N> at;
  for (std::int64_t done = 0; done < n; done += inner) {
    for (std::int64_t i = 0; i < inner; ++i) {
      for (std::size_t k = 0; k < N; ++k) {
        at[k] = offsets[k] + i * inner_strides[k];
      }
      fn(at);
    }
    for (std::int32_t d = 1; d < shape.dim; ++d) {
      const bool carry = ++index[d] == shape.sizes[d];
      for (std::size_t k = 0; k < N; ++k) {
        offsets[k] += views[k]->strides[d] * (carry ? 1 - shape.sizes[d] : 1);
      }
      if (!carry) {
        break;
      }
      index[d] = 0;
    }
  }
}

bool is_floating(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 ||
         dtype == DType::Float32 || dtype == DType::Float64;
}

template <typename C>
C scalar_as(const ScalarValue& value) {
  return std::is_floating_point_v<C> ? static_cast<C>(value.as_double)
                                     : static_cast<C>(value.as_int);
}

// Input `k` of an element-wise call in its compute type: memory, or the value
// of a host scalar operand (`x * 2`), whose view has strides 0.
template <typename In>
struct Operand {
  const In* data = nullptr;
  Compute<In> value{};

  Operand(const ElementwiseCall& call, std::size_t k)
      : data(static_cast<const In*>(call.inputs[k].data)) {
    if (call.scalar_inputs[k]) {
      data = nullptr;
      value = scalar_as<Compute<In>>(call.input_values[k]);
    }
  }
  Compute<In> operator[](std::int64_t offset) const {
    return data == nullptr ? value : static_cast<Compute<In>>(data[offset]);
  }
};

// Enqueues out = op(inputs...) element by element: inputs of type In, out of
// type Out, op taking and returning compute types.
template <typename Out, typename... In, std::size_t... I, typename Op>
void enqueue_map(const KernelContext& ctx, const ElementwiseCall& call,
                 std::index_sequence<I...>, Op op) {
  fake::enqueue_kernel(ctx.stream, [call, op] {
    constexpr std::size_t n = sizeof...(In) + 1;
    const std::array<const TensorView*, n> views{&call.out, &call.inputs[I]...};
    Out* out = static_cast<Out*>(call.out.data);
    [[maybe_unused]] const std::tuple<Operand<In>...> in{
        Operand<In>(call, I)...};
    for_each_offset<n>(views, [&](const auto& at) {
      out[at[0]] = static_cast<Out>(op(std::get<I>(in)[at[I + 1]]...));
    });
  });
}

template <typename T, std::size_t... I, typename Op>
void enqueue_same(const KernelContext& ctx, const ElementwiseCall& call,
                  std::index_sequence<I...> inputs, Op op) {
  enqueue_map<T, decltype((void)I, T{})...>(ctx, call, inputs, op);
}

// Every operand of one dtype; make_op(C{}, call) builds the element op for
// compute type C. FloatingOnly declines integer and bool dtypes (and compiles
// the op for the floating types alone: the file's compile time is these
// instantiations).
template <std::size_t Inputs, bool FloatingOnly, typename MakeOp>
Status same_type(const KernelContext& ctx, const ElementwiseCall& call,
                 MakeOp make_op) {
  const auto enqueue = [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    enqueue_same<T>(ctx, call, std::make_index_sequence<Inputs>{},
                    make_op(C{}, call));
    return kSuccess;
  };
  if constexpr (FloatingOnly) {
    return fake::visit_floating_dtype(call.out.dtype, enqueue);
  } else {
    return visit_dtype(call.out.dtype, enqueue);
  }
}

#define FAKE_KERNEL(name) \
  Status name(const KernelContext& ctx, const ElementwiseCall& call)

// Element ops written once for every compute type C.
#define FAKE_SAME(name, inputs, floating_only, params, expression) \
  FAKE_KERNEL(name) {                                              \
    return same_type<inputs, floating_only>(                       \
        ctx, call, [](auto c, const ElementwiseCall& call) {       \
          using C = decltype(c);                                   \
          (void)call;                                              \
          return [=] params { return (expression); };              \
        });                                                        \
  }

template <typename C>
C fused_add(C x, C y, C k) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::fma(k, y, x);  // as PyTorch's vectorised CPU kernel
  } else {
    return static_cast<C>(x + k * y);
  }
}

// Operands this large go to ATen's vectorised, multi-threaded CPU add (the
// fake device's vector unit, as its GEMM is ATen's): an element loop pays a
// library call per element for the fused multiply-add that keeps results
// equal to the CPU's (an optimizer's add_(alpha=-lr) over a ResNet's
// parameters ran 6x slower than on the CPU).
constexpr std::int64_t kVectorUnitElements = 32768;

FAKE_KERNEL(add) {
  if (is_floating(call.out.dtype) && !call.has_scalar_input() &&
      call.out.numel() >= kVectorUnitElements) {
    fake::enqueue_kernel(ctx.stream, [call] {
      at::Tensor out = host_tensor(call.out);
      at::add_out(out, host_tensor(call.inputs[0]), host_tensor(call.inputs[1]),
                  call.scalars[0].as_double);
    });
    return kSuccess;
  }
  return same_type<2, false>(
      ctx, call, [](auto c, const ElementwiseCall& call) {
        using C = decltype(c);
        const C k = scalar_as<C>(call.scalars[0]);
        return [k](C x, C y) { return fused_add(x, y, k); };
      });
}

// a - alpha * b is a + (-alpha) * b (modular for unsigned types, as on CPU).
FAKE_KERNEL(sub) {
  ElementwiseCall negated = call;
  negated.scalars[0].as_double = -call.scalars[0].as_double;
  negated.scalars[0].as_int = -call.scalars[0].as_int;
  return add(ctx, negated);
}

template <typename C>
bool is_nan(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

FAKE_SAME(mul, 2, false, (C x, C y), x* y)
FAKE_SAME(div, 2, true, (C x, C y), x / y)
FAKE_SAME(maximum, 2, false, (C x, C y),
          is_nan(x) ? x : (is_nan(y) ? y : (x > y ? x : y)))
FAKE_SAME(minimum, 2, false, (C x, C y),
          is_nan(x) ? x : (is_nan(y) ? y : (x < y ? x : y)))
FAKE_SAME(pow, 2, true, (C x, C y), std::pow(x, y))

// PyTorch's CPU kernel special-cases these exponents; so does this one, so
// results agree to the last bit.
FAKE_KERNEL(pow_scalar) {
  return same_type<1, true>(ctx, call, [](auto c, const ElementwiseCall& call) {
    using C = decltype(c);
    const double e = call.scalars[0].as_double;
    return [e](C x) -> C {
      if (e == 2) return x * x;
      if (e == 3) return x * x * x;
      if (e == 0.5) return std::sqrt(x);
      if (e == -0.5) return 1 / std::sqrt(x);
      if (e == -1) return 1 / x;
      if (e == -2) return 1 / (x * x);
      return std::pow(x, static_cast<C>(e));
    };
  });
}

// Comparisons: inputs of the compute dtype, out Bool.
template <typename Compare>
Status compare(const KernelContext& ctx, const ElementwiseCall& call,
               Compare compare) {
  return visit_dtype(call.inputs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    enqueue_map<bool, T, T>(ctx, call, std::make_index_sequence<2>{}, compare);
    return kSuccess;
  });
}

#define FAKE_COMPARE(name, op)                                        \
  FAKE_KERNEL(name) {                                                 \
    return compare(ctx, call, [](auto x, auto y) { return x op y; }); \
  }
FAKE_COMPARE(eq, ==)
FAKE_COMPARE(ne, !=)
FAKE_COMPARE(lt, <)
FAKE_COMPARE(le, <=)
FAKE_COMPARE(gt, >)
FAKE_COMPARE(ge, >=)
#undef FAKE_COMPARE

FAKE_KERNEL(where) {
  return visit_dtype(call.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    enqueue_map<T, bool, T, T>(
        ctx, call, std::make_index_sequence<3>{},
        [](bool condition, auto x, auto y) { return condition ? x : y; });
    return kSuccess;
  });
}

constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kSqrt2 = 1.41421356237309504880;

FAKE_SAME(exp_kernel, 1, true, (C x), std::exp(x))
FAKE_SAME(log_kernel, 1, true, (C x), std::log(x))
FAKE_SAME(sqrt_kernel, 1, true, (C x), std::sqrt(x))
FAKE_SAME(rsqrt_kernel, 1, true, (C x), 1 / std::sqrt(x))
FAKE_SAME(sin_kernel, 1, true, (C x), std::sin(x))
FAKE_SAME(cos_kernel, 1, true, (C x), std::cos(x))
FAKE_SAME(tanh_kernel, 1, true, (C x), std::tanh(x))
FAKE_SAME(sigmoid_kernel, 1, true, (C x), 1 / (1 + std::exp(-x)))
FAKE_SAME(reciprocal_kernel, 1, true, (C x), 1 / x)
FAKE_SAME(erf_kernel, 1, true, (C x), std::erf(x))
FAKE_SAME(silu_kernel, 1, true, (C x), x / (1 + std::exp(-x)))
FAKE_SAME(neg_kernel, 1, false, (C x), static_cast<C>(-x))
FAKE_SAME(relu_kernel, 1, false, (C x), is_nan(x) ? x : (x > 0 ? x : C(0)))
FAKE_SAME(gelu_kernel, 1, true, (C x),
          C(0.5) * x * (1 + std::erf(x * C(kSqrt1_2))))
FAKE_SAME(gelu_tanh_kernel, 1, true, (C x),
          C(0.5) * x *
              (1 + std::tanh(C(kSqrt2 * kTwoOverSqrtPi * 0.5) *
                             (x + C(0.044715) * x * x * x))))
FAKE_SAME(threshold_backward, 2, false, (C grad, C x),
          x <= scalar_as<C>(call.scalars[0]) ? C(0) : grad)
FAKE_SAME(sigmoid_backward, 2, true, (C grad, C out), grad * (1 - out) * out)
FAKE_SAME(tanh_backward, 2, true, (C grad, C out), grad * (1 - out * out))
FAKE_SAME(silu_backward, 2, true, (C grad, C x),
          grad / (1 + std::exp(-x)) * (1 + x * (1 - 1 / (1 + std::exp(-x)))))
FAKE_SAME(gelu_backward, 2, true, (C grad, C x),
          grad*(C(0.5) * (1 + std::erf(x * C(kSqrt1_2))) +
                x * C(kTwoOverSqrtPi * kSqrt1_2 * 0.5) *
                    std::exp(C(-0.5) * x * x)))
FAKE_SAME(addcmul, 3, false, (C self, C a, C b),
          self + scalar_as<C>(call.scalars[0]) * a * b)
FAKE_SAME(addcdiv, 3, true, (C self, C a, C b),
          self + scalar_as<C>(call.scalars[0]) * (a / b))
FAKE_SAME(fill, 0, false, (), scalar_as<C>(call.scalars[0]))

FAKE_KERNEL(gelu_backward_tanh) {
  return same_type<2, true>(ctx, call, [](auto c, const ElementwiseCall&) {
    using C = decltype(c);
    return [](C grad, C x) {
      const C beta = C(kSqrt2 * kTwoOverSqrtPi * 0.5);
      const C kappa = C(0.044715);
      const C inner = beta * (x + kappa * x * x * x);
      const C tanh_inner = std::tanh(inner);
      const C left_derivative = C(0.5) * (1 + tanh_inner);
      const C right_derivative = C(0.5) * x * (1 - tanh_inner * tanh_inner) *
                                 beta * (1 + 3 * kappa * x * x);
      return grad * (left_derivative + right_derivative);
    };
  });
}

// clamp(x, min, max) with either bound possibly left out; NaN stays NaN.
FAKE_KERNEL(clamp) {
  return same_type<1, false>(
      ctx, call, [](auto c, const ElementwiseCall& call) {
        using C = decltype(c);
        const ScalarValue lo = call.scalars[0], hi = call.scalars[1];
        return [lo, hi](C x) {
          if (is_nan(x)) return x;
          if (!lo.is_none && x < scalar_as<C>(lo)) x = scalar_as<C>(lo);
          if (!hi.is_none && x > scalar_as<C>(hi)) x = scalar_as<C>(hi);
          return x;
        };
      });
}

FAKE_KERNEL(clamp_min) {
  ElementwiseCall bounds = call;
  bounds.scalars[1].is_none = true;
  return clamp(ctx, bounds);
}

FAKE_KERNEL(clamp_max) {
  ElementwiseCall bounds = call;
  bounds.scalars[1] = call.scalars[0];
  bounds.scalars[0].is_none = true;
  return clamp(ctx, bounds);
}

// lerp as PyTorch computes it: from the nearer end, for accuracy.
template <typename C>
C lerp_value(C self, C end, C weight) {
  return std::abs(weight) < C(0.5) ? self + weight * (end - self)
                                   : end - (end - self) * (1 - weight);
}
FAKE_SAME(lerp, 3, true, (C self, C end, C weight),
          lerp_value(self, end, weight))
FAKE_SAME(lerp_scalar, 2, true, (C self, C end),
          lerp_value(self, end, scalar_as<C>(call.scalars[0])))

// dst = src converted: the one kernel whose input has another dtype.
FAKE_KERNEL(copy) {
  return visit_dtype(call.out.dtype, [&](auto out_tag) {
    using Out = decltype(out_tag);
    return visit_dtype(call.inputs[0].dtype, [&](auto in_tag) {
      using In = decltype(in_tag);
      enqueue_map<Out, In>(ctx, call, std::make_index_sequence<1>{},
                           [](auto x) { return x; });
      return kSuccess;
    });
  });
}

// out = mask ? value : out (in place; the mask is inputs[0]).
FAKE_KERNEL(masked_fill) {
  if (call.has_scalar_input()) {
    return kNotSupported;  // core moves the mask to the device: never here
  }
  return visit_dtype(call.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T value = static_cast<T>(scalar_as<Compute<T>>(call.scalars[0]));
    fake::enqueue_kernel(ctx.stream, [call, value] {
      T* out = static_cast<T*>(call.out.data);
      const bool* mask = static_cast<const bool*>(call.inputs[0].data);
      for_each_offset<2>({&call.out, &call.inputs[0]}, [&](const auto& at) {
        if (mask[at[1]]) {
          out[at[0]] = value;
        }
      });
    });
    return kSuccess;
  });
}

// out[i] = start + i * step, computed in double (int64 for integers).
FAKE_KERNEL(arange) {
  return visit_dtype(call.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const ScalarValue start = call.scalars[0], step = call.scalars[1];
    fake::enqueue_kernel(ctx.stream, [call, start, step] {
      T* out = static_cast<T*>(call.out.data);
      std::int64_t i = 0;
      for_each_offset<1>({&call.out}, [&](const auto& at) {
        if (start.is_integral) {
          out[at[0]] = static_cast<T>(start.as_int + step.as_int * i++);
        } else {
          out[at[0]] = static_cast<T>(
              start.as_double + step.as_double * static_cast<double>(i++));
        }
      });
    });
    return kSuccess;
  });
}

#undef FAKE_SAME
#undef FAKE_KERNEL

// The multi-tensor form of an element-wise kernel: each tensor's kernel,
// enqueued together as one stream item (one launch for the list). A decline
// (a dtype the kernel lacks: the same for every tensor) enqueues nothing.
template <torch_backend::ElementwiseKernel Kernel>
Status multi_tensor(const KernelContext& ctx, const ElementwiseCall* calls,
                    std::int32_t count) {
  fake::KernelBatch batch;
  for (std::int32_t t = 0; t < count; ++t) {
    const Status status = Kernel(ctx, calls[t]);
    if (status != kSuccess) {
      return status;
    }
  }
  batch.submit(ctx.stream);
  return kSuccess;
}

}  // namespace

void register_fake_elementwise(torch_backend::KernelRegistry& kernels) {
  const std::pair<const char*, torch_backend::ElementwiseKernel> elementwise[] =
      {{"add", &add},
       {"sub", &sub},
       {"mul", &mul},
       {"div", &div},
       {"maximum", &maximum},
       {"minimum", &minimum},
       {"pow", &pow},
       {"pow_scalar", &pow_scalar},
       {"eq", &eq},
       {"ne", &ne},
       {"lt", &lt},
       {"le", &le},
       {"gt", &gt},
       {"ge", &ge},
       {"where", &where},
       {"exp", &exp_kernel},
       {"log", &log_kernel},
       {"sqrt", &sqrt_kernel},
       {"rsqrt", &rsqrt_kernel},
       {"sin", &sin_kernel},
       {"cos", &cos_kernel},
       {"tanh", &tanh_kernel},
       {"sigmoid", &sigmoid_kernel},
       {"neg", &neg_kernel},
       {"reciprocal", &reciprocal_kernel},
       {"erf", &erf_kernel},
       {"silu", &silu_kernel},
       {"relu", &relu_kernel},
       {"gelu", &gelu_kernel},
       {"gelu_tanh", &gelu_tanh_kernel},
       {"clamp", &clamp},
       {"clamp_min", &clamp_min},
       {"clamp_max", &clamp_max},
       {"threshold_backward", &threshold_backward},
       {"sigmoid_backward", &sigmoid_backward},
       {"tanh_backward", &tanh_backward},
       {"silu_backward", &silu_backward},
       {"gelu_backward", &gelu_backward},
       {"gelu_backward_tanh", &gelu_backward_tanh},
       {"addcmul", &addcmul},
       {"addcdiv", &addcdiv},
       {"lerp", &lerp},
       {"lerp_scalar", &lerp_scalar},
       {"fill", &fill},
       {"masked_fill", &masked_fill},
       {"copy", &copy},
       {"arange", &arange}};
  for (const auto& [name, kernel] : elementwise) {
    kernels.elementwise(name, kernel);
  }
  kernels.multi_tensor("add", &multi_tensor<&add>);
  kernels.multi_tensor("sub", &multi_tensor<&sub>);
  kernels.multi_tensor("mul", &multi_tensor<&mul>);
  kernels.multi_tensor("div", &multi_tensor<&div>);
  kernels.multi_tensor("addcmul", &multi_tensor<&addcmul>);
  kernels.multi_tensor("addcdiv", &multi_tensor<&addcdiv>);
  kernels.multi_tensor("lerp_scalar", &multi_tensor<&lerp_scalar>);
  kernels.multi_tensor("sqrt", &multi_tensor<&sqrt_kernel>);
}
