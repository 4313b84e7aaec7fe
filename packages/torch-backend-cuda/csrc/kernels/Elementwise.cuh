// The element-wise family: out = op(inputs..., scalars...) over views of one
// shape (DeviceKernels.h). One thread per element; each op is a small functor
// in the compute type (float for half and bfloat16), written once for the GPU
// and the host emulation.
#pragma once

#include "Portable.cuh"

namespace gpu {

using torch_backend::ElementwiseCall;

// op of one element's inputs x, in the compute type C, stored as Out.
template <typename Out, typename C, int Inputs, typename Op>
GPU_HD Out map_one(const Op& op, const C (&x)[Inputs > 0 ? Inputs : 1]) {
  if constexpr (Inputs == 0) {
    return store<Out>(op());
  } else if constexpr (Inputs == 1) {
    return store<Out>(op(x[0]));
  } else if constexpr (Inputs == 2) {
    return store<Out>(op(x[0], x[1]));
  } else {
    return store<Out>(op(x[0], x[1], x[2]));
  }
}

// The inputs of an element-wise call: device memory, or (in[k] == nullptr)
// a host scalar operand's value, passed by value as CUDA's
// gpu_kernel_with_scalars passes it.
template <typename In, int Inputs>
struct MapInputs {
  const In* in[Inputs > 0 ? Inputs : 1];
  Compute<In> scalar[Inputs > 0 ? Inputs : 1];
};

template <typename In, int Inputs>
MapInputs<In, Inputs> map_inputs(const ElementwiseCall& call) {
  MapInputs<In, Inputs> inputs{};
  for (int k = 0; k < Inputs; ++k) {
    if (call.scalar_inputs[k]) {
      inputs.in[k] = nullptr;
      inputs.scalar[k] = scalar_as<Compute<In>>(call.input_values[k]);
    } else {
      inputs.in[k] = data_of<const In>(call.inputs[k]);
    }
  }
  return inputs;
}

// out[i] = op(in0[i], ...): In the inputs' type, Out the output's.
template <typename Out, typename In, int Inputs, typename Op>
struct MapFn {
  IndexMap<Inputs + 1> map;
  Out* out;
  MapInputs<In, Inputs> inputs;
  Op op;

  GPU_HD void operator()(std::int64_t i) const {
    std::int64_t at[Inputs + 1];
    map.offsets(i, at);
    Compute<In> x[Inputs > 0 ? Inputs : 1];
    for (int k = 0; k < Inputs; ++k) {
      x[k] = inputs.in[k] != nullptr ? load(inputs.in[k][at[k + 1]])
                                     : inputs.scalar[k];
    }
    out[at[0]] = map_one<Out, Compute<In>, Inputs>(op, x);
  }
};

#if defined(__CUDACC__)
// Every operand contiguous and aligned: each thread maps kVector elements
// with one vector load per input and one vector store (16 bytes for float),
// as CUDA's own element-wise kernels do, then the tail element by element.
// Memory-bound ops reach the bandwidth only so.
template <int kVector, typename Out, typename In, int Inputs, typename Op>
__global__ void vector_map_kernel(std::int64_t n, Out* out,
                                  MapInputs<In, Inputs> in, Op op) {
  using C = Compute<In>;
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  const std::int64_t first =
      blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t vectors = n / kVector;
  for (std::int64_t v = first; v < vectors; v += step) {
    Packed<In, kVector> loaded[Inputs > 0 ? Inputs : 1];
#pragma unroll
    for (int k = 0; k < Inputs; ++k) {
      if (in.in[k] != nullptr) {
        loaded[k] = reinterpret_cast<const Packed<In, kVector>*>(in.in[k])[v];
      }
    }
    Packed<Out, kVector> result;
#pragma unroll
    for (int j = 0; j < kVector; ++j) {
      C x[Inputs > 0 ? Inputs : 1];
#pragma unroll
      for (int k = 0; k < Inputs; ++k) {
        x[k] = in.in[k] != nullptr ? load(loaded[k].v[j]) : in.scalar[k];
      }
      result.v[j] = map_one<Out, C, Inputs>(op, x);
    }
    reinterpret_cast<Packed<Out, kVector>*>(out)[v] = result;
  }
  for (std::int64_t i = vectors * kVector + first; i < n; i += step) {
    C x[Inputs > 0 ? Inputs : 1];
#pragma unroll
    for (int k = 0; k < Inputs; ++k) {
      x[k] = in.in[k] != nullptr ? load(in.in[k][i]) : in.scalar[k];
    }
    out[i] = map_one<Out, C, Inputs>(op, x);
  }
}

template <typename T>
bool aligned_to(const T* pointer, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(pointer) % bytes == 0;
}

// Launches vector_map_kernel where every operand is contiguous (one
// coalesced dimension of stride 1) and aligned to the vector's size; false
// where not (the generic kernel then runs).
template <typename Out, typename In, int Inputs, typename Op>
bool try_vector_map(const KernelContext& ctx,
                    const MapFn<Out, In, Inputs, Op>& fn, Status* status) {
  constexpr int kBytes = sizeof(In) > sizeof(Out) ? sizeof(In) : sizeof(Out);
  constexpr int kVector = kBytes >= 16 ? 1 : 16 / kBytes;
  if (kVector < 2 || fn.map.dims != 1) {
    return false;
  }
  Out* out = fn.out + fn.map.base[0];
  MapInputs<In, Inputs> in = fn.inputs;
  bool ok = fn.map.strides[0][0] == 1 && aligned_to(out, sizeof(Out) * kVector);
  for (int k = 0; k < Inputs; ++k) {
    if (in.in[k] != nullptr) {  // a host scalar needs no alignment
      in.in[k] += fn.map.base[k + 1];
      ok = ok && fn.map.strides[0][k + 1] == 1 &&
           aligned_to(in.in[k], sizeof(In) * kVector);
    }
  }
  if (!ok) {
    return false;
  }
  const std::int64_t n = fn.map.count();
  const std::int64_t wanted = (n / kVector + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(
      wanted < 1 ? 1 : (wanted < (1 << 20) ? wanted : (1 << 20)));
  vector_map_kernel<kVector, Out, In, Inputs>
      <<<blocks, kThreads, 0, static_cast<cudaStream_t>(ctx.stream)>>>(
          n, out, in, fn.op);
  *status = last_launch_status();
  return true;
}
#endif

template <typename Out, typename In, int Inputs, typename Op>
Status run_map(const KernelContext& ctx, const ElementwiseCall& call,
               const Op& op, bool reorder = true) {
  const TensorView* views[Inputs + 1] = {&call.out};
  MapFn<Out, In, Inputs, Op> fn{};
  fn.out = data_of<Out>(call.out);
  for (int k = 0; k < Inputs; ++k) {
    views[k + 1] = &call.inputs[k];
  }
  fn.inputs = map_inputs<In, Inputs>(call);
  fn.map = map_dims(views, -1, reorder);
  fn.op = op;
#if defined(__CUDACC__)
  Status status = kSuccess;
  if (fn.map.count() > 0 && try_vector_map(ctx, fn, &status)) {
    return status;
  }
#endif
  return launch_each(ctx, fn.map.count(), fn);
}

// Every operand of one dtype: Op<C>::make(call) builds the element op for
// compute type C; FloatingOnly declines integer and bool dtypes (core then
// runs the call on its fallback).
template <template <typename> class Op, int Inputs, bool FloatingOnly>
struct SameType {
  template <typename T>
  struct Job {
    static Status run(const KernelContext& ctx, const ElementwiseCall& call) {
      if constexpr (FloatingOnly && !is_floating<T>) {
        return kNotSupported;
      } else {
        return run_map<T, T, Inputs>(ctx, call, Op<Compute<T>>::make(call));
      }
    }
  };
};

template <template <typename> class Op, int Inputs, bool FloatingOnly>
Status same_type(const KernelContext& ctx, const ElementwiseCall& call) {
  return dispatch<SameType<Op, Inputs, FloatingOnly>::template Job>(
      call.out.dtype, ctx, call);
}

// An op without parameters: C operator()(C...) and a make() that reads none.
#define GPU_STATELESS(Name) \
  static Name make(const ElementwiseCall&) { return {}; }

#define GPU_UNARY(Name, expression)                          \
  template <typename C>                                      \
  struct Name {                                              \
    GPU_HD C operator()(C x) const { return C(expression); } \
    GPU_STATELESS(Name)                                      \
  };
#define GPU_BINARY(Name, expression)                              \
  template <typename C>                                           \
  struct Name {                                                   \
    GPU_HD C operator()(C x, C y) const { return C(expression); } \
    GPU_STATELESS(Name)                                           \
  };

constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kSqrt2 = 1.41421356237309504880;

GPU_UNARY(Exp, exp_of(x))
GPU_UNARY(Log, log_of(x))
GPU_UNARY(Sqrt, sqrt_of(x))
GPU_UNARY(Rsqrt, C(1) / sqrt_of(x))
GPU_UNARY(Sin, sin_of(x))
GPU_UNARY(Cos, cos_of(x))
GPU_UNARY(Tanh, tanh_of(x))
GPU_UNARY(Sigmoid, C(1) / (C(1) + exp_of(-x)))
GPU_UNARY(Reciprocal, C(1) / x)
GPU_UNARY(Erf, erf_of(x))
GPU_UNARY(Silu, x / (C(1) + exp_of(-x)))
GPU_UNARY(Neg, -x)
GPU_UNARY(Relu, is_nan(x) ? x : (x > C(0) ? x : C(0)))
GPU_UNARY(Gelu, C(0.5) * x * (C(1) + erf_of(x * C(kSqrt1_2))))
GPU_UNARY(GeluTanh, C(0.5) * x *
                        (C(1) + tanh_of(C(kSqrt2 * kTwoOverSqrtPi * 0.5) *
                                        (x + C(0.044715) * x * x * x))))

GPU_BINARY(Mul, x* y)
GPU_BINARY(Div, x / y)
GPU_BINARY(Maximum, is_nan(x) ? x : (is_nan(y) ? y : (x > y ? x : y)))
GPU_BINARY(Minimum, is_nan(x) ? x : (is_nan(y) ? y : (x < y ? x : y)))
GPU_BINARY(Pow, pow_of(x, y))
// (grad, output) and (grad, input) pairs of the activations' backward.
GPU_BINARY(SigmoidBackward, x*(C(1) - y) * y)
GPU_BINARY(TanhBackward, x*(C(1) - y * y))
GPU_BINARY(SiluBackward, x / (C(1) + exp_of(-y)) *
                             (C(1) + y * (C(1) - C(1) / (C(1) + exp_of(-y)))))
GPU_BINARY(GeluBackward,
           x*(C(0.5) * (C(1) + erf_of(y * C(kSqrt1_2))) +
              y * C(kTwoOverSqrtPi * kSqrt1_2 * 0.5) * exp_of(C(-0.5) * y * y)))

template <typename C>
struct GeluBackwardTanh {
  GPU_HD C operator()(C grad, C x) const {
    const C beta = C(kSqrt2 * kTwoOverSqrtPi * 0.5);
    const C kappa = C(0.044715);
    const C tanh_inner = tanh_of(beta * (x + kappa * x * x * x));
    const C left = C(0.5) * (C(1) + tanh_inner);
    const C right = C(0.5) * x * (C(1) - tanh_inner * tanh_inner) * beta *
                    (C(1) + C(3) * kappa * x * x);
    return grad * (left + right);
  }
  GPU_STATELESS(GeluBackwardTanh)
};

#undef GPU_UNARY
#undef GPU_BINARY

// x + k * y, fused for floating types (as PyTorch's vectorised kernels).
template <typename C>
struct Add {
  C k;
  GPU_HD C operator()(C x, C y) const {
    if constexpr (std::is_floating_point_v<C>) {
      return fma_of(k, y, x);
    } else {
      return C(x + k * y);
    }
  }
  static Add make(const ElementwiseCall& call) {
    return {scalar_as<C>(call.scalars[0])};
  }
};

// a - alpha * b is a + (-alpha) * b (modular for unsigned types).
template <typename C>
struct Sub : Add<C> {
  static Sub make(const ElementwiseCall& call) {
    ScalarValue negated = call.scalars[0];
    negated.as_double = -negated.as_double;
    negated.as_int = -negated.as_int;
    return {{scalar_as<C>(negated)}};
  }
};

// PyTorch's kernels special-case these exponents; so does this one.
template <typename C>
struct PowScalar {
  C e;
  GPU_HD C operator()(C x) const {
    if (e == C(2)) return x * x;
    if (e == C(3)) return x * x * x;
    if (e == C(0.5)) return sqrt_of(x);
    if (e == C(-0.5)) return C(1) / sqrt_of(x);
    if (e == C(-1)) return C(1) / x;
    if (e == C(-2)) return C(1) / (x * x);
    return pow_of(x, e);
  }
  static PowScalar make(const ElementwiseCall& call) {
    return {static_cast<C>(call.scalars[0].as_double)};
  }
};

template <typename C>
struct ThresholdBackward {
  C threshold;
  GPU_HD C operator()(C grad, C x) const {
    return x <= threshold ? C(0) : grad;
  }
  static ThresholdBackward make(const ElementwiseCall& call) {
    return {scalar_as<C>(call.scalars[0])};
  }
};

template <typename C>
struct Addcmul {
  C value;
  GPU_HD C operator()(C self, C a, C b) const {
    return C(self + value * a * b);
  }
  static Addcmul make(const ElementwiseCall& call) {
    return {scalar_as<C>(call.scalars[0])};
  }
};

template <typename C>
struct Addcdiv {
  C value;
  GPU_HD C operator()(C self, C a, C b) const { return self + value * (a / b); }
  static Addcdiv make(const ElementwiseCall& call) {
    return {scalar_as<C>(call.scalars[0])};
  }
};

template <typename C>
struct Fill {
  C value;
  GPU_HD C operator()() const { return value; }
  static Fill make(const ElementwiseCall& call) {
    return {scalar_as<C>(call.scalars[0])};
  }
};

// clamp(x, lo, hi) with either bound possibly absent; NaN stays NaN.
template <typename C>
struct Clamp {
  C lo, hi;
  bool has_lo, has_hi;
  GPU_HD C operator()(C x) const {
    if (is_nan(x)) return x;
    if (has_lo && x < lo) x = lo;
    if (has_hi && x > hi) x = hi;
    return x;
  }
  static Clamp bounds(const ScalarValue& lo, const ScalarValue& hi) {
    return {lo.is_none ? C(0) : scalar_as<C>(lo),
            hi.is_none ? C(0) : scalar_as<C>(hi), !lo.is_none, !hi.is_none};
  }
  static Clamp make(const ElementwiseCall& call) {
    return bounds(call.scalars[0], call.scalars[1]);
  }
};
template <typename C>
struct ClampMin : Clamp<C> {
  static ClampMin make(const ElementwiseCall& call) {
    ScalarValue none;
    none.is_none = true;
    return {Clamp<C>::bounds(call.scalars[0], none)};
  }
};
template <typename C>
struct ClampMax : Clamp<C> {
  static ClampMax make(const ElementwiseCall& call) {
    ScalarValue none;
    none.is_none = true;
    return {Clamp<C>::bounds(none, call.scalars[0])};
  }
};

// lerp as PyTorch computes it: from the nearer end, for accuracy.
template <typename C>
GPU_HD C lerp_value(C self, C end, C weight) {
  return abs_of(weight) < C(0.5) ? self + weight * (end - self)
                                 : end - (end - self) * (C(1) - weight);
}
template <typename C>
struct Lerp {
  GPU_HD C operator()(C self, C end, C weight) const {
    return lerp_value(self, end, weight);
  }
  GPU_STATELESS(Lerp)
};
template <typename C>
struct LerpScalar {
  C weight;
  GPU_HD C operator()(C self, C end) const {
    return lerp_value(self, end, weight);
  }
  static LerpScalar make(const ElementwiseCall& call) {
    return {scalar_as<C>(call.scalars[0])};
  }
};

#undef GPU_STATELESS

// ---- ops whose operands differ in dtype ---------------------------------

// Comparisons: inputs of the compute dtype, out Bool.
template <template <typename> class Compare>
struct CompareJob {
  template <typename T>
  struct Job {
    static Status run(const KernelContext& ctx, const ElementwiseCall& call) {
      return run_map<bool, T, 2>(ctx, call, Compare<Compute<T>>{});
    }
  };
};
#define GPU_COMPARE(Name, op)                                 \
  template <typename C>                                       \
  struct Name {                                               \
    GPU_HD bool operator()(C x, C y) const { return x op y; } \
  };
GPU_COMPARE(Eq, ==)
GPU_COMPARE(Ne, !=)
GPU_COMPARE(Lt, <)
GPU_COMPARE(Le, <=)
GPU_COMPARE(Gt, >)
GPU_COMPARE(Ge, >=)
#undef GPU_COMPARE

template <template <typename> class Compare>
Status compare(const KernelContext& ctx, const ElementwiseCall& call) {
  return dispatch<CompareJob<Compare>::template Job>(call.inputs[0].dtype, ctx,
                                                     call);
}

// out = condition ? x : y, the condition Bool.
template <typename T>
struct WhereFn {
  IndexMap<4> map;
  T* out;
  const bool* condition;
  const T* x;
  const T* y;
  GPU_HD void operator()(std::int64_t i) const {
    std::int64_t at[4];
    map.offsets(i, at);
    out[at[0]] = condition[at[1]] ? x[at[2]] : y[at[3]];
  }
};
template <typename T>
struct WhereJob {
  static Status run(const KernelContext& ctx, const ElementwiseCall& call) {
    const TensorView* views[4] = {&call.out, &call.inputs[0], &call.inputs[1],
                                  &call.inputs[2]};
    const WhereFn<T> fn{map_all(views), data_of<T>(call.out),
                        data_of<const bool>(call.inputs[0]),
                        data_of<const T>(call.inputs[1]),
                        data_of<const T>(call.inputs[2])};
    return launch_each(ctx, fn.map.count(), fn);
  }
};

// out = mask ? value : out, in place; the mask is inputs[0].
template <typename T>
struct MaskedFillFn {
  IndexMap<2> map;
  T* out;
  const bool* mask;
  T value;
  GPU_HD void operator()(std::int64_t i) const {
    std::int64_t at[2];
    map.offsets(i, at);
    if (mask[at[1]]) {
      out[at[0]] = value;
    }
  }
};
template <typename T>
struct MaskedFillJob {
  static Status run(const KernelContext& ctx, const ElementwiseCall& call) {
    const TensorView* views[2] = {&call.out, &call.inputs[0]};
    const MaskedFillFn<T> fn{map_all(views), data_of<T>(call.out),
                             data_of<const bool>(call.inputs[0]),
                             store<T>(scalar_as<Compute<T>>(call.scalars[0]))};
    return launch_each(ctx, fn.map.count(), fn);
  }
};

// out = input converted: the one kernel whose input has another dtype.
struct Identity {
  template <typename V>
  GPU_HD V operator()(V x) const {
    return x;
  }
};
template <typename Out>
struct CopyJob {
  template <typename In>
  struct From {
    static Status run(const KernelContext& ctx, const ElementwiseCall& call) {
      return run_map<Out, In, 1>(ctx, call, Identity{});
    }
  };
  static Status run(const KernelContext& ctx, const ElementwiseCall& call) {
    return dispatch<From>(call.inputs[0].dtype, ctx, call);
  }
};

// out[i] = start + i * step in the views' own order, computed in double
// (int64 for integral starts and steps).
template <typename T>
struct ArangeFn {
  IndexMap<1> map;
  T* out;
  ScalarValue start, step;
  GPU_HD void operator()(std::int64_t i) const {
    std::int64_t at[1];
    map.offsets(i, at);
    if (start.is_integral) {
      out[at[0]] = store<T>(start.as_int + step.as_int * i);
    } else {
      out[at[0]] =
          store<T>(start.as_double + step.as_double * static_cast<double>(i));
    }
  }
};
template <typename T>
struct ArangeJob {
  static Status run(const KernelContext& ctx, const ElementwiseCall& call) {
    const TensorView* views[1] = {&call.out};
    const ArangeFn<T> fn{map_dims(views, -1, /*reorder=*/false),
                         data_of<T>(call.out), call.scalars[0],
                         call.scalars[1]};
    return launch_each(ctx, fn.map.count(), fn);
  }
};

#define GPU_ELEMENTWISE(name) \
  inline Status name(const KernelContext& ctx, const ElementwiseCall& call)

GPU_ELEMENTWISE(where_kernel) {
  if (call.has_scalar_input()) {
    return kNotSupported;  // core fills device tensors instead
  }
  return dispatch<WhereJob>(call.out.dtype, ctx, call);
}
GPU_ELEMENTWISE(masked_fill_kernel) {
  if (call.has_scalar_input()) {
    return kNotSupported;  // core fills device tensors instead
  }
  return dispatch<MaskedFillJob>(call.out.dtype, ctx, call);
}
GPU_ELEMENTWISE(copy_kernel) {
  if (call.has_scalar_input()) {
    return kNotSupported;  // core fills device tensors instead
  }
  return dispatch<CopyJob>(call.out.dtype, ctx, call);
}
GPU_ELEMENTWISE(arange_kernel) {
  return dispatch<ArangeJob>(call.out.dtype, ctx, call);
}
#undef GPU_ELEMENTWISE

// Every element-wise kernel, by the op table's name.
inline void register_elementwise(torch_backend::KernelRegistry& kernels) {
  using Kernel = torch_backend::ElementwiseKernel;
  const struct {
    const char* name;
    Kernel kernel;
  } table[] = {
      {"add", &same_type<Add, 2, false>},
      {"sub", &same_type<Sub, 2, false>},
      {"mul", &same_type<Mul, 2, false>},
      {"div", &same_type<Div, 2, true>},
      {"maximum", &same_type<Maximum, 2, false>},
      {"minimum", &same_type<Minimum, 2, false>},
      {"pow", &same_type<Pow, 2, true>},
      {"pow_scalar", &same_type<PowScalar, 1, true>},
      {"eq", &compare<Eq>},
      {"ne", &compare<Ne>},
      {"lt", &compare<Lt>},
      {"le", &compare<Le>},
      {"gt", &compare<Gt>},
      {"ge", &compare<Ge>},
      {"where", &where_kernel},
      {"exp", &same_type<Exp, 1, true>},
      {"log", &same_type<Log, 1, true>},
      {"sqrt", &same_type<Sqrt, 1, true>},
      {"rsqrt", &same_type<Rsqrt, 1, true>},
      {"sin", &same_type<Sin, 1, true>},
      {"cos", &same_type<Cos, 1, true>},
      {"tanh", &same_type<Tanh, 1, true>},
      {"sigmoid", &same_type<Sigmoid, 1, true>},
      {"neg", &same_type<Neg, 1, false>},
      {"reciprocal", &same_type<Reciprocal, 1, true>},
      {"erf", &same_type<Erf, 1, true>},
      {"silu", &same_type<Silu, 1, true>},
      {"relu", &same_type<Relu, 1, false>},
      {"gelu", &same_type<Gelu, 1, true>},
      {"gelu_tanh", &same_type<GeluTanh, 1, true>},
      {"clamp", &same_type<Clamp, 1, false>},
      {"clamp_min", &same_type<ClampMin, 1, false>},
      {"clamp_max", &same_type<ClampMax, 1, false>},
      {"threshold_backward", &same_type<ThresholdBackward, 2, false>},
      {"sigmoid_backward", &same_type<SigmoidBackward, 2, true>},
      {"tanh_backward", &same_type<TanhBackward, 2, true>},
      {"silu_backward", &same_type<SiluBackward, 2, true>},
      {"gelu_backward", &same_type<GeluBackward, 2, true>},
      {"gelu_backward_tanh", &same_type<GeluBackwardTanh, 2, true>},
      {"addcmul", &same_type<Addcmul, 3, false>},
      {"addcdiv", &same_type<Addcdiv, 3, true>},
      {"lerp", &same_type<Lerp, 3, true>},
      {"lerp_scalar", &same_type<LerpScalar, 2, true>},
      {"fill", &same_type<Fill, 0, false>},
      {"masked_fill", &masked_fill_kernel},
      {"copy", &copy_kernel},
      {"arange", &arange_kernel},
  };
  for (const auto& entry : table) {
    kernels.elementwise(entry.name, entry.kernel);
  }
}

}  // namespace gpu
