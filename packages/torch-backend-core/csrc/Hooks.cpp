// PrivateUse1 hooks: what torch.accelerator and ATen ask of any accelerator.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/DeviceGuard.h>

#include <torch_backend/Runtime.h>

#include "Registration.h"

namespace torch_backend {
namespace {

using c10::DeviceIndex;

class Hooks final : public at::PrivateUse1HooksInterface {
 public:
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  void init() const override {}

  DeviceIndex deviceCount() const override {
    return static_cast<DeviceIndex>(device_count());
  }

  DeviceIndex getCurrentDevice() const override {
    int device = 0;
    TORCH_BACKEND_CHECK(active_runtime().get_device(&device));
    return static_cast<DeviceIndex>(device);
  }

  void setCurrentDevice(DeviceIndex device) const override {
    check_device_index(device);
    TORCH_BACKEND_CHECK(active_runtime().set_device(device));
  }

  DeviceIndex exchangeDevice(DeviceIndex device) const override {
    const DeviceIndex old = getCurrentDevice();
    if (old != device) {
      setCurrentDevice(device);
    }
    return old;
  }

  DeviceIndex maybeExchangeDevice(DeviceIndex device) const override {
    return exchangeDevice(device);
  }

  bool hasPrimaryContext(DeviceIndex device) const override {
    return device >= 0 && device < device_count();
  }
};

}  // namespace

void register_hooks() {
  static Hooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
}

}  // namespace torch_backend
