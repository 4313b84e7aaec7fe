// c10 device guard over the runtime's per-thread current device.
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <torch_backend/Runtime.h>

#include "Registration.h"

namespace torch_backend {
namespace {

using c10::Device;
using c10::DeviceIndex;
using c10::DeviceType;
using c10::Stream;

class DeviceGuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  DeviceType type() const override { return DeviceType::PrivateUse1; }

  Device exchangeDevice(Device device) const override {
    const Device old = getDevice();
    if (old.index() != device.index()) {
      setDevice(device);
    }
    return old;
  }

  Device getDevice() const override {
    int device = 0;
    TORCH_BACKEND_CHECK(active_runtime().get_device(&device));
    return {DeviceType::PrivateUse1, static_cast<DeviceIndex>(device)};
  }

  void setDevice(Device device) const override {
    TORCH_INTERNAL_ASSERT(device.type() == DeviceType::PrivateUse1);
    check_device_index(device.index());
    TORCH_BACKEND_CHECK(active_runtime().set_device(device.index()));
  }

  void uncheckedSetDevice(Device device) const noexcept override {
    (void)active_runtime().set_device(device.index());
  }

  // Only the default stream exists until the runtime grows stream support.
  Stream getStream(Device device) const override {
    return Stream(Stream::DEFAULT, device);
  }

  Stream exchangeStream(Stream stream) const override {
    return Stream(Stream::DEFAULT, stream.device());
  }

  DeviceIndex deviceCount() const noexcept override {
    try {
      return static_cast<DeviceIndex>(device_count());
    } catch (...) {
      return 0;
    }
  }

  void synchronizeDevice(DeviceIndex device_index) const override {
    const Device old = exchangeDevice({DeviceType::PrivateUse1, device_index});
    TORCH_BACKEND_CHECK(active_runtime().synchronize_device());
    setDevice(old);
  }
};

}  // namespace

void register_device_guard() {
  static c10::impl::DeviceGuardImplRegistrar registrar(DeviceType::PrivateUse1,
                                                       new DeviceGuardImpl());
}

}  // namespace torch_backend
