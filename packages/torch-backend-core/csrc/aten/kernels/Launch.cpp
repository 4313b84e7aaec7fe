#include "Launch.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/ge.h>
#include <ATen/ops/lt.h>
#include <ATen/ops/masked_select.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ne.h>

#include <torch_backend/Runtime.h>

#include <algorithm>
#include <optional>
#include <type_traits>

#include "../../runtime/Capture.h"
#include "../../runtime/Streams.h"
#include "../fallback/Fallback.h"

namespace torch_backend {

TensorView view_of(const at::Tensor& tensor) {
  TensorView view;
  view.data = tensor.storage().mutable_data();
  view.offset = tensor.storage_offset();
  view.dtype = *kernel_dtype(tensor.scalar_type());
  view.dim = static_cast<int32_t>(tensor.dim());
  TORCH_CHECK(view.dim <= kMaxKernelDims, "device kernels take at most ",
              kMaxKernelDims, " dimensions, got ", view.dim);
  for (int d = 0; d < view.dim; ++d) {
    view.sizes[d] = tensor.size(d);
    view.strides[d] = tensor.stride(d);
  }
  return view;
}

TensorView view_of(const at::TensorIteratorBase& iter, int arg) {
  TensorView view;
  view.data = iter.data_ptr(arg);
  view.dtype = *kernel_dtype(iter.dtype(arg));
  view.dim = static_cast<int32_t>(iter.ndim());
  const int64_t element = iter.element_size(arg);
  for (int d = 0; d < view.dim; ++d) {
    view.sizes[d] = iter.shape()[d];
    view.strides[d] = iter.strides(arg)[d] / element;
  }
  return view;
}

namespace {

// A ScalarValue in `compute`: convert(scalar_t{}) gives the value in that
// dtype's C++ type (in `math`'s where given: a wider type of the same kind).
template <class Convert>
ScalarValue value_in(at::ScalarType compute, Convert convert,
                     std::optional<at::ScalarType> math = std::nullopt) {
  ScalarValue value;
  value.is_integral = at::isIntegralType(compute, /*includeBool=*/true);
  AT_DISPATCH_ALL_TYPES_AND3(
      at::kHalf, at::kBFloat16, at::kBool, math.value_or(compute),
      "scalar_value", [&] {
        const scalar_t converted = convert(scalar_t{});
        if (value.is_integral) {
          value.as_int = static_cast<int64_t>(converted);
          value.as_double = static_cast<double>(value.as_int);
        } else {
          value.as_double = static_cast<double>(converted);
          value.as_int = static_cast<int64_t>(value.as_double);
        }
      });
  return value;
}

}  // namespace

ScalarValue scalar_value(const c10::Scalar& scalar, at::ScalarType compute) {
  return value_in(compute, [&](auto tag) {
    return scalar.to<decltype(tag)>();  // checked
  });
}

namespace {

template <class T>
T cast_to(const c10::Scalar& scalar) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(scalar.isBoolean() ? scalar.toBool()
                                             : scalar.toLong());
  } else {
    return static_cast<T>(scalar.toDouble());
  }
}

}  // namespace

ScalarValue cast_scalar(const c10::Scalar& scalar, at::ScalarType compute) {
  return value_in(compute,
                  [&](auto tag) { return cast_to<decltype(tag)>(scalar); });
}

ScalarValue opmath_scalar(const c10::Scalar& scalar, at::ScalarType compute) {
  return value_in(
      compute, [&](auto tag) { return cast_to<decltype(tag)>(scalar); },
      at::toOpMathType(compute));
}

void set_scalar_input(ElementwiseCall& call, int k, DType dtype,
                      const ScalarValue& value) {
  TensorView& view = call.inputs[k];
  view = TensorView();  // no data; strides 0
  view.dtype = dtype;
  view.dim = call.out.dim;
  std::copy_n(call.out.sizes, view.dim, view.sizes);
  call.scalar_inputs[k] = true;
  call.input_values[k] = value;
}

KernelContext kernel_context(const c10::Device& device) {
  KernelContext ctx;
  ctx.device = device.index();
  ctx.stream = native_stream(current_stream(device.index()));
  return ctx;
}

bool kernel_ran(Status status) {
  if (status == kNotSupported) {
    return false;
  }
  TORCH_BACKEND_CHECK(status);
  return true;
}

void fall_back(const c10::OperatorHandle& op, torch::jit::Stack& stack) {
  DeviceKernelCount::mark_declined();  // the fallback counts this call
  run_fallback(op, &stack);
}

std::optional<int64_t> first_out_of_range(const at::Tensor& index, int64_t size,
                                          std::optional<int64_t> ignore) {
  if (index.numel() == 0) {
    return std::nullopt;
  }
  // A capture records work instead of running it, so the host cannot read
  // the indices: the kernel meets a bad one when it runs (DeviceKernels.h),
  // as CUDA's device-side asserts do in a graph.
  if (is_capturing(current_stream(index.device().index()))) {
    return std::nullopt;
  }
  // lt(0) and ge(size) never hold together: ne is their "or".
  at::Tensor bad = at::ne(at::lt(index, 0), at::ge(index, size));
  if (ignore) {
    bad = at::mul(bad, at::ne(index, *ignore));
  }
  if (!at::amax(bad).item<bool>()) {
    return std::nullopt;
  }
  return index.cpu().masked_select(bad.cpu()).view(-1)[0].item<int64_t>();
}

std::optional<c10::OperatorHandle> find_optional_op(const char* qualified) {
  return qualified == nullptr
             ? std::nullopt
             : std::optional<c10::OperatorHandle>(find_op(qualified));
}

c10::OperatorHandle find_op(const char* qualified) {
  std::string name = std::string("aten::") + qualified;
  std::string overload;
  const auto dot = name.find('.');
  if (dot != std::string::npos) {
    overload = name.substr(dot + 1);
    name.resize(dot);
  }
  return c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(),
                                                        overload.c_str());
}

}  // namespace torch_backend
