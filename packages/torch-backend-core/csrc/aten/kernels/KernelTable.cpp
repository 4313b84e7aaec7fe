#include "KernelTable.h"

#include <unordered_map>

#include <c10/util/Exception.h>

#include <torch_backend/Runtime.h>

namespace torch_backend {

KernelRegistry::~KernelRegistry() = default;

namespace {

class Table final : public KernelRegistry {
 public:
  void binary(const char* name, BinaryKernel kernel) override {
    TORCH_CHECK(kernel != nullptr, "binary kernel '", name, "' is null");
    binary_[name] = kernel;
  }

  void unary(const char* name, UnaryKernel kernel) override {
    TORCH_CHECK(kernel != nullptr, "unary kernel '", name, "' is null");
    unary_[name] = kernel;
  }

  std::unordered_map<std::string, BinaryKernel> binary_;
  std::unordered_map<std::string, UnaryKernel> unary_;
};

Table& table() {
  static auto* instance = new Table();  // leaked: kernels run until exit
  return *instance;
}

}  // namespace

void load_device_kernels(DeviceRuntime* runtime) {
  using Define = void (*)(KernelRegistry&);
  using Abi = int (*)();
  auto define = reinterpret_cast<Define>(
      device_library_symbol(runtime, TORCH_BACKEND_DEVICE_KERNELS_SYMBOL));
  if (define == nullptr) {
    return;
  }
  auto abi = reinterpret_cast<Abi>(
      device_library_symbol(runtime, "torch_backend_device_kernels_abi"));
  const int version = abi != nullptr ? abi() : -1;
  TORCH_CHECK(version == kDeviceKernelsAbiVersion,
              "the device library's kernels were built for device-kernel ABI ",
              version, " but this torch-backend-core expects ",
              kDeviceKernelsAbiVersion, "; rebuild the backend package");
  define(table());
}

BinaryKernel binary_kernel(const std::string& name) {
  auto it = table().binary_.find(name);
  return it == table().binary_.end() ? nullptr : it->second;
}

UnaryKernel unary_kernel(const std::string& name) {
  auto it = table().unary_.find(name);
  return it == table().unary_.end() ? nullptr : it->second;
}

}  // namespace torch_backend
