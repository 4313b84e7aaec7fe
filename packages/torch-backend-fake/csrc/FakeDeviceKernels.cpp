// The fake device's kernels (torch_backend/DeviceKernels.h): computed on the
// host, enqueued on the stream core hands them, so they run in stream order
// on the stream's worker thread exactly as a real device's kernels would.
// Off unless TORCH_BACKEND_FAKE_KERNELS=1 (the default keeps the zero-copy
// CPU fallback, which is faster on host memory).
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

// Calls fn(out_offset, a_offset, b_offset) for every element, in elements.
template <typename Fn>
void for_each_index(const TensorView& out, const TensorView& a,
                    const TensorView& b, Fn fn) {
  const std::int64_t n = out.numel();
  if (n == 0) {
    return;
  }
  std::int64_t index[torch_backend::kMaxKernelDims] = {};
  std::int64_t o = out.offset, x = a.offset, y = b.offset;
  const std::int64_t inner = out.dim > 0 ? out.sizes[0] : 1;
  const std::int64_t so = out.dim > 0 ? out.strides[0] : 0;
  const std::int64_t sa = a.dim > 0 ? a.strides[0] : 0;
  const std::int64_t sb = b.dim > 0 ? b.strides[0] : 0;
  for (std::int64_t done = 0; done < n; done += inner) {
    for (std::int64_t i = 0; i < inner; ++i) {
      fn(o + i * so, x + i * sa, y + i * sb);
    }
    // Advance the outer dimensions (dimension 0 is the innermost).
    for (std::int32_t d = 1; d < out.dim; ++d) {
      o += out.strides[d];
      x += a.strides[d];
      y += b.strides[d];
      if (++index[d] < out.sizes[d]) {
        break;
      }
      o -= out.strides[d] * out.sizes[d];
      x -= a.strides[d] * a.sizes[d];
      y -= b.strides[d] * b.sizes[d];
      index[d] = 0;
    }
  }
}

// Half and bfloat16 compute in float, as PyTorch's CPU kernels do.
template <typename T>
using Compute = std::conditional_t<
    std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16>, float, T>;

template <typename T, typename Op>
void binary_loop(const TensorView& out, const TensorView& a,
                 const TensorView& b, Op op) {
  T* o = static_cast<T*>(out.data);
  const T* x = static_cast<const T*>(a.data);
  const T* y = static_cast<const T*>(b.data);
  for_each_index(
      out, a, b, [&](std::int64_t io, std::int64_t ia, std::int64_t ib) {
        o[io] = static_cast<T>(
            op(static_cast<Compute<T>>(x[ia]), static_cast<Compute<T>>(y[ib])));
      });
}

// Dispatches on dtype; `make_op` builds the element operation for a compute
// type from alpha. Enqueues the loop on the kernel's stream.
template <typename MakeOp>
Status enqueue_binary(const KernelContext& ctx, const TensorView& out,
                      const TensorView& a, const TensorView& b,
                      const ScalarValue& alpha, MakeOp make_op) {
  auto run = [=](auto tag) {
    using T = decltype(tag);
    auto op = make_op(Compute<T>{}, alpha);
    fake_enqueue(ctx.stream, [=] { binary_loop<T>(out, a, b, op); });
    return kSuccess;
  };
  switch (out.dtype) {
    case DType::Bool:
      return run(bool{});
    case DType::UInt8:
      return run(std::uint8_t{});
    case DType::Int8:
      return run(std::int8_t{});
    case DType::Int16:
      return run(std::int16_t{});
    case DType::Int32:
      return run(std::int32_t{});
    case DType::Int64:
      return run(std::int64_t{});
    case DType::Float16:
      return run(c10::Half{});
    case DType::BFloat16:
      return run(c10::BFloat16{});
    case DType::Float32:
      return run(float{});
    case DType::Float64:
      return run(double{});
  }
  return kNotSupported;
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
}
