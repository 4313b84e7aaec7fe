// PrivateUse1 hooks: what torch.accelerator and ATen ask of any accelerator.
#include <ATen/detail/PrivateUse1HooksInterface.h>

#include <torch_backend/Generator.h>
#include <torch_backend/Runtime.h>

#include "../memory/HostAllocator.h"
#include "../runtime/Streams.h"
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
    return current_device_index();
  }

  void setCurrentDevice(DeviceIndex device) const override {
    set_current_device(device);
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

  const at::Generator& getDefaultGenerator(DeviceIndex device) const override {
    return default_generator(device);
  }

  at::Generator getNewGenerator(DeviceIndex device) const override {
    return new_generator(device);
  }

  bool isPinnedPtr(const void* data) const override { return is_pinned(data); }

  at::Allocator* getPinnedMemoryAllocator() const override {
    return host_allocator();
  }

  void resizePrivateUse1Bytes(const c10::Storage& storage,
                              size_t new_bytes) const override {
    resize_storage_bytes(storage, new_bytes);
  }
};

}  // namespace

void register_hooks() {
  static Hooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
}

}  // namespace torch_backend
