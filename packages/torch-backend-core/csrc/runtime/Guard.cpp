// c10 device guard over the runtime: current device, streams and events.
// torch.Stream / torch.Event and torch.accelerator all go through here.
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceCapability.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <torch_backend/Runtime.h>

#include "Guard.h"

#include "Capture.h"
#include "StreamDependencies.h"
#include "Streams.h"

namespace torch_backend {
namespace {

using c10::Device;
using c10::DeviceIndex;
using c10::DeviceType;
using c10::Stream;

// Runs `fn` with `device` current, restoring the caller's device.
template <typename Fn>
auto with_current_device(DeviceIndex device, Fn&& fn) {
  const int previous = current_device();
  set_current_device(device);
  struct Restore {
    int device;
    ~Restore() { set_current_device_unchecked(device); }
  } restore{previous};
  return fn();
}

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
    return {DeviceType::PrivateUse1, current_device_index()};
  }

  void setDevice(Device device) const override {
    TORCH_INTERNAL_ASSERT(device.type() == DeviceType::PrivateUse1);
    set_current_device(device.index());
  }

  void uncheckedSetDevice(Device device) const noexcept override {
    set_current_device_unchecked(device.index());
  }

  DeviceIndex deviceCount() const noexcept override {
    try {
      return static_cast<DeviceIndex>(device_count());
    } catch (...) {
      return 0;
    }
  }

  // --- streams ---------------------------------------------------------------
  Stream getStream(Device device) const override {
    return current_stream(device.index());
  }

  Stream getDefaultStream(Device device) const override {
    return default_stream(device.index());
  }

  Stream getStreamFromGlobalPool(Device device,
                                 bool high_priority) const override {
    return stream_from_pool(device.index(), high_priority ? -1 : 0);
  }

  Stream getNewStream(Device device, int priority) const override {
    return stream_from_pool(device.index(), priority);
  }

  void* getStreamNativeHandle(const Stream stream) const override {
    return native_stream(stream);
  }

  Stream exchangeStream(Stream stream) const override {
    const Stream old = current_stream(stream.device_index());
    set_current_stream(stream);
    return old;
  }

  bool queryStream(const Stream& stream) const override {
    refuse_while_capturing(stream, "querying whether its work is done",
                           kHostSyncAdvice);
    return with_current_device(stream.device_index(), [&] {
      bool complete = false;
      TORCH_BACKEND_CHECK(
          active_runtime().stream_query(native_stream(stream), &complete));
      if (complete) {
        check_stream_dependencies(stream);
      }
      return complete;
    });
  }

  void synchronizeStream(const Stream& stream) const override {
    with_current_device(stream.device_index(), [&] {
      synchronize_stream(stream);
      return 0;
    });
  }

  // torch.accelerator.get_device_capability: the dtypes tensors may have.
  // Every one: memory and copies are dtype-blind, and an op no kernel of
  // the backend takes runs on the CPU fallback.
  c10::DeviceCapability getDeviceCapability(Device device) const override {
    if (device.has_index()) {
      check_device_index(device.index());
    }
    return c10::DeviceCapability();
  }

  void synchronizeDevice(DeviceIndex device) const override {
    refuse_while_device_captures(device, "synchronizing the device",
                                 kHostSyncAdvice);
    with_current_device(device, [device] {
      TORCH_BACKEND_CHECK(active_runtime().synchronize_device());
      check_device_dependencies(device);
      return 0;
    });
  }

  void recordDataPtrOnStream(const c10::DataPtr& data_ptr,
                             const Stream& stream) const override {
    // Through c10's allocator interface: the guard sits below the memory
    // layer and must not know which allocator is registered.
    c10::getDeviceAllocator(DeviceType::PrivateUse1)
        ->recordStream(data_ptr, stream);
  }

  // --- events ----------------------------------------------------------------
  void record(void** event, const Stream& stream, DeviceIndex device_index,
              c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
                "Event device index ", device_index,
                " does not match recording stream's device index ",
                stream.device_index(), ".");
    with_current_device(stream.device_index(), [&] {
      if (*event == nullptr) {
        // BACKEND_DEFAULT is what torch.Event(enable_timing=True) asks for.
        TORCH_BACKEND_CHECK(active_runtime().event_create(
            event, flag == c10::EventFlag::BACKEND_DEFAULT));
      }
      TORCH_BACKEND_CHECK(
          active_runtime().event_record(*event, native_stream(stream)));
      note_event_recorded(*event, stream);
      return 0;
    });
  }

  void block(void* event, const Stream& stream) const override {
    if (event == nullptr) {
      return;  // never recorded: nothing to wait for
    }
    with_current_device(stream.device_index(), [&] {
      TORCH_BACKEND_CHECK(
          active_runtime().stream_wait_event(native_stream(stream), event));
      note_event_waited(event, stream);
      return 0;
    });
  }

  bool queryEvent(void* event) const override {
    if (event == nullptr) {
      return true;
    }
    bool complete = false;
    TORCH_BACKEND_CHECK(active_runtime().event_query(event, &complete));
    if (complete) {
      check_event_dependencies(event);
    }
    return complete;
  }

  void synchronizeEvent(void* event) const override {
    if (event != nullptr) {
      TORCH_BACKEND_CHECK(active_runtime().event_synchronize(event));
      check_event_dependencies(event);
    }
  }

  void destroyEvent(void* event, DeviceIndex) const noexcept override {
    if (event != nullptr) {
      forget_event(event);
      (void)active_runtime().event_destroy(event);
    }
  }

  double elapsedTime(void* start, void* end, DeviceIndex) const override {
    TORCH_CHECK(start != nullptr && end != nullptr,
                "Both events must be recorded before calculating elapsed "
                "time.");
    float ms = 0;
    TORCH_BACKEND_CHECK(active_runtime().event_elapsed_time(&ms, start, end));
    return ms;
  }
};

}  // namespace

void register_device_guard() {
  static c10::impl::DeviceGuardImplRegistrar registrar(DeviceType::PrivateUse1,
                                                       new DeviceGuardImpl());
}

}  // namespace torch_backend
