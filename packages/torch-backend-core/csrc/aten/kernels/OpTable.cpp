// The kernel names each family accepts, read from the op table (OpTable.h),
// for checking the names a backend registers (KernelTable.cpp). Only strings:
// no meta headers here.
#include "OpTable.h"

#include <algorithm>

namespace torch_backend {

std::vector<std::string> known_kernels(const std::string& family) {
  std::vector<std::string> names;
  if (family == "elementwise") {
#define TORCH_BACKEND_ELEMENTWISE_NAME(id, kernel, Meta, functional, out, \
                                       inplace, rule)                     \
  names.emplace_back(#kernel);
    TORCH_BACKEND_ELEMENTWISE_OPS(TORCH_BACKEND_ELEMENTWISE_NAME)
#undef TORCH_BACKEND_ELEMENTWISE_NAME
    // approximate='tanh' variants (a string argument selects the kernel).
    names.insert(names.end(), {"gelu_tanh", "gelu_backward_tanh"});
    names.insert(names.end(), {"copy", "arange"});  // Copy.cpp, Stubs.cpp
  } else if (family == "multi_tensor") {
    for (const auto& [overload, kernel] : foreach_ops()) {
      if (std::find(names.begin(), names.end(), kernel) == names.end()) {
        names.push_back(kernel);
      }
    }
  } else if (family == "reduction") {
#define TORCH_BACKEND_REDUCTION_NAME(id, Meta, functional, out, empty) \
  names.emplace_back(#id);
    TORCH_BACKEND_REDUCTION_OPS(TORCH_BACKEND_REDUCTION_NAME)
#undef TORCH_BACKEND_REDUCTION_NAME
  } else if (family == "indexing") {
    names = {"index_select", "index_add", "gather", "scatter_add"};
  } else if (family == "arg_reduction") {
    names = {"max", "min"};
  } else if (family == "pooling") {
    names = {"max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"};
  } else if (family == "softmax") {
#define TORCH_BACKEND_SOFTMAX_NAME(kernel, Meta, functional, out, BackMeta, \
                                   back_functional, back_out)               \
  names.emplace_back(#kernel);
    TORCH_BACKEND_SOFTMAX_OPS(TORCH_BACKEND_SOFTMAX_NAME)
#undef TORCH_BACKEND_SOFTMAX_NAME
  }
  return names;
}

}  // namespace torch_backend
