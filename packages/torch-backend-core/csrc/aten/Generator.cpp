// Device generators: the CPU's mt19937 engine labelled as the device's, so
// their state round-trips with get_state/set_state and host-run kernels can
// draw from them.
#include <torch_backend/Generator.h>

#include <memory>
#include <mutex>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>

#include <torch_backend/Runtime.h>

#include "../runtime/Streams.h"

namespace torch_backend {
namespace {

class DeviceGenerator final : public at::CPUGeneratorImpl {
 public:
  DeviceGenerator(c10::DeviceIndex device, uint64_t seed)
      : at::CPUGeneratorImpl(seed) {
    device_ = c10::Device(c10::DeviceType::PrivateUse1, device);
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }

 private:
  DeviceGenerator* clone_impl() const override {
    auto* copy = new DeviceGenerator(device_.index(), current_seed());
    copy->set_state(*get_state());
    return copy;
  }
};

}  // namespace

const at::Generator& default_generator(c10::DeviceIndex device) {
  static std::once_flag once;
  static std::vector<at::Generator>* generators = nullptr;  // leaked
  std::call_once(once, [] {
    generators = new std::vector<at::Generator>();
    for (int d = 0; d < device_count(); ++d) {
      generators->push_back(at::make_generator<DeviceGenerator>(
          static_cast<c10::DeviceIndex>(d), c10::default_rng_seed_val));
    }
  });
  return (*generators)[checked_device_index(device)];
}

at::Generator new_generator(c10::DeviceIndex device) {
  return at::make_generator<DeviceGenerator>(checked_device_index(device),
                                             c10::default_rng_seed_val);
}

}  // namespace torch_backend
