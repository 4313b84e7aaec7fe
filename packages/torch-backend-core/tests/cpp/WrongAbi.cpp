// A device library built against a different (future) device-runtime ABI.
#include <torch_backend/DeviceRuntime.h>

extern "C" TORCH_BACKEND_EXPORT torch_backend::DeviceRuntime*
torch_backend_device_runtime(int* abi_version) {
  *abi_version = torch_backend::kDeviceRuntimeAbiVersion + 1;
  return nullptr;
}
