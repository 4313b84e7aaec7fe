// DDP's reducer times forward, backward compute and communication per
// iteration (ddp._get_ddp_logging_data()). For device tensors it needs a
// timer that reads the device's stream clock, registered for PrivateUse1;
// without one DDP warns and reports no times.
#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

#include <optional>

namespace torch_backend::distributed {
namespace {

class DeviceTimer : public c10d::Timer {
 public:
  explicit DeviceTimer(c10::Device device) : device_(device) {}

  void record(Event event) override {
    // Forward start is a host time (as for CUDA): it may come before any
    // device work of the iteration exists.
    c10d::Timer::record(event);
    if (event == Event::kForwardStart) {
      return;
    }
    c10::impl::VirtualGuardImpl guard(device_.type());
    slot(event).emplace(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
    slot(event)->record(guard.getStream(device_));
  }

  std::optional<int64_t> measureDifference(Event start, Event end) override {
    auto& first = slot(start);
    auto& last = slot(end);
    if (!first || !last || !first->was_marked_for_recording() ||
        !last->was_marked_for_recording()) {
      return std::nullopt;
    }
    last->synchronize();
    const double ms = first->elapsedTime(*last);
    if (ms < 0) {
      return std::nullopt;  // recorded out of order: no meaningful time
    }
    return static_cast<int64_t>(ms * 1e6);
  }

 private:
  std::optional<c10::Event>& slot(Event event) {
    switch (event) {
      case Event::kBackwardComputeStart:
        return compute_start_;
      case Event::kBackwardComputeEnd:
        return compute_end_;
      case Event::kBackwardCommStart:
        return comm_start_;
      case Event::kBackwardCommEnd:
        return comm_end_;
      default:
        return unused_;
    }
  }

  c10::Device device_;
  std::optional<c10::Event> compute_start_, compute_end_, comm_start_,
      comm_end_, unused_;
};

}  // namespace
}  // namespace torch_backend::distributed

namespace c10d {
// The registry's macro needs its own namespace.
C10_REGISTER_TYPED_CLASS(TimerRegistry, c10::kPrivateUse1,
                         torch_backend::distributed::DeviceTimer)
}  // namespace c10d
