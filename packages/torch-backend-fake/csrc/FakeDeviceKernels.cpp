// The fake device's kernels (torch_backend/DeviceKernels.h): computed on the
// host, enqueued on the stream core hands them, so they run in stream order
// on the stream's worker thread exactly as a real device's kernels would.
// Off unless TORCH_BACKEND_FAKE_KERNELS=1 (the default keeps the zero-copy
// CPU fallback, which is faster on host memory).
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <torch_backend/DeviceKernels.h>

void fake_enqueue(torch_backend::StreamHandle stream,
                  std::function<void()> work);

namespace {

using torch_backend::BinaryKernel;
using torch_backend::DType;
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

// Half and bfloat16 compute in float, as PyTorch's CPU kernels do.
template <typename T>
using Compute = std::conditional_t<
    std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16>, float, T>;

// Calls fn(T{}) for the C++ type of `dtype`.
template <typename Fn>
Status visit_dtype(DType dtype, Fn fn) {
  switch (dtype) {
    case DType::Bool:
      return fn(bool{});
    case DType::UInt8:
      return fn(std::uint8_t{});
    case DType::Int8:
      return fn(std::int8_t{});
    case DType::Int16:
      return fn(std::int16_t{});
    case DType::Int32:
      return fn(std::int32_t{});
    case DType::Int64:
      return fn(std::int64_t{});
    case DType::Float16:
      return fn(c10::Half{});
    case DType::BFloat16:
      return fn(c10::BFloat16{});
    case DType::Float32:
      return fn(float{});
    case DType::Float64:
      return fn(double{});
  }
  return kNotSupported;
}

// Enqueues out = op(a, b) on the kernel's stream; `make_op` builds the
// element operation for a compute type from alpha.
template <typename MakeOp>
Status enqueue_binary(const KernelContext& ctx, const TensorView& out,
                      const TensorView& a, const TensorView& b,
                      const ScalarValue& alpha, MakeOp make_op) {
  return visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    auto op = make_op(Compute<T>{}, alpha);
    fake_enqueue(ctx.stream, [=] {
      T* o = static_cast<T*>(out.data);
      const T* x = static_cast<const T*>(a.data);
      const T* y = static_cast<const T*>(b.data);
      for_each_offset<3>({&out, &a, &b}, [&](const auto& at) {
        o[at[0]] = static_cast<T>(op(static_cast<Compute<T>>(x[at[1]]),
                                     static_cast<Compute<T>>(y[at[2]])));
      });
    });
    return kSuccess;
  });
}

// Enqueues out = op(in) on the kernel's stream; op takes the compute type.
template <typename Op>
Status enqueue_unary(const KernelContext& ctx, const TensorView& out,
                     const TensorView& in, Op op) {
  return visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    fake_enqueue(ctx.stream, [=] {
      T* o = static_cast<T*>(out.data);
      const T* x = static_cast<const T*>(in.data);
      for_each_offset<2>({&out, &in}, [&](const auto& at) {
        o[at[0]] = static_cast<T>(op(static_cast<Compute<T>>(x[at[1]])));
      });
    });
    return kSuccess;
  });
}

template <typename C>
C alpha_as(const ScalarValue& alpha) {
  return std::is_floating_point_v<C> ? static_cast<C>(alpha.as_double)
                                     : static_cast<C>(alpha.as_int);
}

Status add(const KernelContext& ctx, const TensorView& out, const TensorView& a,
           const TensorView& b, const ScalarValue& alpha) {
  return enqueue_binary(ctx, out, a, b, alpha,
                        [](auto c, const ScalarValue& s) {
                          using C = decltype(c);
                          const C k = alpha_as<C>(s);
                          // Fused, as PyTorch's vectorised CPU kernel computes
                          // it.
                          if constexpr (std::is_floating_point_v<C>) {
                            return [k](C x, C y) { return std::fma(k, y, x); };
                          } else {
                            return [k](C x, C y) { return x + k * y; };
                          }
                        });
}

// a - alpha * b is a + (-alpha) * b (modular for unsigned types, as on CPU).
Status sub(const KernelContext& ctx, const TensorView& out, const TensorView& a,
           const TensorView& b, const ScalarValue& alpha) {
  ScalarValue negated = alpha;
  negated.as_double = -alpha.as_double;
  negated.as_int = -alpha.as_int;
  return add(ctx, out, a, b, negated);
}

Status mul(const KernelContext& ctx, const TensorView& out, const TensorView& a,
           const TensorView& b, const ScalarValue& alpha) {
  return enqueue_binary(ctx, out, a, b, alpha, [](auto c, const ScalarValue&) {
    using C = decltype(c);
    return [](C x, C y) { return x * y; };
  });
}

Status div(const KernelContext& ctx, const TensorView& out, const TensorView& a,
           const TensorView& b, const ScalarValue& alpha) {
  if (out.dtype != DType::Float16 && out.dtype != DType::BFloat16 &&
      out.dtype != DType::Float32 && out.dtype != DType::Float64) {
    return kNotSupported;  // true division of integers promotes to float
  }
  return enqueue_binary(ctx, out, a, b, alpha, [](auto c, const ScalarValue&) {
    using C = decltype(c);
    return [](C x, C y) { return x / y; };
  });
}

bool is_floating(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 ||
         dtype == DType::Float32 || dtype == DType::Float64;
}

// Unary kernels. Float functions get floating dtypes only (ATen's meta
// functions promote integer inputs); anything else is declined.
template <typename Fn>
Status float_unary(const KernelContext& ctx, const TensorView& out,
                   const TensorView& in, Fn fn) {
  if (!is_floating(out.dtype)) {
    return kNotSupported;
  }
  return enqueue_unary(ctx, out, in, [fn](auto x) {
    using C = decltype(x);
    if constexpr (std::is_floating_point_v<C>) {
      return fn(x);
    } else {
      return x;  // never reached: declined above
    }
  });
}

#define FAKE_FLOAT_UNARY(name, expression)                                 \
  Status name(const KernelContext& ctx, const TensorView& out,             \
              const TensorView& in) {                                      \
    return float_unary(ctx, out, in, [](auto x) { return (expression); }); \
  }
FAKE_FLOAT_UNARY(exp_kernel, std::exp(x))
FAKE_FLOAT_UNARY(log_kernel, std::log(x))
FAKE_FLOAT_UNARY(sqrt_kernel, std::sqrt(x))
FAKE_FLOAT_UNARY(rsqrt_kernel, 1 / std::sqrt(x))
FAKE_FLOAT_UNARY(sin_kernel, std::sin(x))
FAKE_FLOAT_UNARY(cos_kernel, std::cos(x))
FAKE_FLOAT_UNARY(tanh_kernel, std::tanh(x))
FAKE_FLOAT_UNARY(sigmoid_kernel, 1 / (1 + std::exp(-x)))
FAKE_FLOAT_UNARY(reciprocal_kernel, 1 / x)
FAKE_FLOAT_UNARY(erf_kernel, std::erf(x))
FAKE_FLOAT_UNARY(silu_kernel, x / (1 + std::exp(-x)))
#undef FAKE_FLOAT_UNARY

Status neg_kernel(const KernelContext& ctx, const TensorView& out,
                  const TensorView& in) {
  return enqueue_unary(ctx, out, in, [](auto x) { return -x; });
}

bool kernels_enabled() {
  const char* value = std::getenv("TORCH_BACKEND_FAKE_KERNELS");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

}  // namespace

TORCH_BACKEND_DEFINE_DEVICE_KERNELS(kernels) {
  if (!kernels_enabled()) {
    return;
  }
  kernels.binary("add", &add);
  kernels.binary("sub", &sub);
  kernels.binary("mul", &mul);
  kernels.binary("div", &div);
  kernels.unary("exp", &exp_kernel);
  kernels.unary("log", &log_kernel);
  kernels.unary("sqrt", &sqrt_kernel);
  kernels.unary("rsqrt", &rsqrt_kernel);
  kernels.unary("sin", &sin_kernel);
  kernels.unary("cos", &cos_kernel);
  kernels.unary("tanh", &tanh_kernel);
  kernels.unary("sigmoid", &sigmoid_kernel);
  kernels.unary("neg", &neg_kernel);
  kernels.unary("reciprocal", &reciprocal_kernel);
  kernels.unary("erf", &erf_kernel);
  kernels.unary("silu", &silu_kernel);
}
