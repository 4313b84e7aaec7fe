// PyTorch's legacy profiler (torch.autograd.profiler.profile(use_device=...,
// use_kineto=False)) times each op on the device with a pair of events, as it
// does with CUDA's: these stubs record the runtime's timing events on the
// current stream. Without them every op warns "PrivateUse1 used in profiler
// but not enabled" and the table's times are garbage.
#include "LegacyProfiler.h"

#include <c10/core/DeviceGuard.h>
#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

#include <memory>
#include <mutex>

#include <torch_backend/Runtime.h>

#include "../runtime/Streams.h"

namespace torch_backend {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

class DeviceProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
 public:
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    const c10::DeviceIndex index = current_device_index();
    if (device != nullptr) {
      *device = index;
    }
    DeviceRuntime& runtime = active_runtime();
    EventHandle handle = nullptr;
    check_status(runtime.event_create(&handle, /*enable_timing=*/true),
                 "event_create");
    // Owned from here: destroyed with the profiler's last reference to it.
    *event = std::shared_ptr<void>(
        handle, [](void* owned) { active_runtime().event_destroy(owned); });
    if (cpu_ns != nullptr) {
      *cpu_ns = c10::getTime();
    }
    check_status(
        runtime.event_record(handle, native_stream(current_stream(index))),
        "event_record");
  }

  // Microseconds between two recorded events, as CUDA's stubs answer.
  float elapsed(const ProfilerVoidEventStub* start,
                const ProfilerVoidEventStub* end) const override {
    DeviceRuntime& runtime = active_runtime();
    check_status(runtime.event_synchronize(start->get()), "event_synchronize");
    check_status(runtime.event_synchronize(end->get()), "event_synchronize");
    float ms = 0;
    check_status(runtime.event_elapsed_time(&ms, start->get(), end->get()),
                 "event_elapsed_time");
    return ms * 1000.0f;
  }

  // Ranges and marks go to a vendor's tracer (NVTX for CUDA): none here.
  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}

  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    for (int d = 0; d < device_count(); ++d) {
      c10::DeviceGuard guard(
          {c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(d)});
      op(d);
    }
  }

  void synchronize() const override {
    check_status(active_runtime().synchronize_device(), "synchronize_device");
  }
};

}  // namespace

void register_legacy_profiler_stubs() {
  static std::once_flag once;
  std::call_once(once, [] {
    static DeviceProfilerStubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  });
}

}  // namespace torch_backend
