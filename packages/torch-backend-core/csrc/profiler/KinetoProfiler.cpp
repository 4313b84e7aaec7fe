#include "KinetoProfiler.h"

#if __has_include(<torch/csrc/profiler/standalone/privateuse1_profiler.h>)
#define TORCH_BACKEND_HAS_PRIVATEUSE1_PROFILER 1
#endif

#ifdef TORCH_BACKEND_HAS_PRIVATEUSE1_PROFILER
// PyTorch's wheels are built with Kineto; its PrivateUse1 registry is
// declared only under USE_KINETO.
#ifndef USE_KINETO
#define USE_KINETO 1
#endif
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <ActivityType.h>
#include <IActivityProfiler.h>
#include <libkineto.h>  // CpuTraceBuffer, complete for getTraceBuffer
#include <output_base.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "../runtime/DeviceActivity.h"
#endif

namespace torch_backend {

#ifdef TORCH_BACKEND_HAS_PRIVATEUSE1_PROFILER
namespace {

using libkineto::ActivityType;

ActivityType activity_type(const std::string& op_name) {
  return op_name.find("copy") != std::string::npos
             ? ActivityType::GPU_MEMCPY
             : ActivityType::CONCURRENT_KERNEL;
}

class Session final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    start_collecting_device_activity();
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    records_ = stop_collecting_device_activity();
    status_ = libkineto::TraceStatus::READY;
  }

  std::vector<std::string> errors() override { return {}; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, nullptr, 0, 0);
  }

  // Each op's device work becomes an activity like a CUDA kernel's, linked
  // to the op that launched it (PyTorch adds its time to that op's device
  // time). Kineto takes the activities with getTraceBuffer, after logging.
  void processTrace(libkineto::ActivityLogger& logger,
                    libkineto::getLinkedActivityCallback linked,
                    int64_t /*startTime*/, int64_t /*endTime*/) override {
    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->gpuOpCount = static_cast<int>(records_.size());
    for (const DeviceActivityRecord& record : records_) {
      buffer_->span.startTime =
          buffer_->span.startTime == 0
              ? record.start_ns
              : std::min(buffer_->span.startTime, record.start_ns);
      buffer_->span.endTime = std::max(buffer_->span.endTime, record.end_ns);
    }
    buffer_->span.name = "torch_backend";
    for (const DeviceActivityRecord& record : records_) {
      buffer_->emplace_activity(buffer_->span, activity_type(record.name),
                                record.name);
      libkineto::GenericTraceActivity& activity = *buffer_->activities.back();
      activity.startTime = record.start_ns;
      activity.endTime = record.end_ns;
      activity.id = static_cast<int32_t>(record.correlation);
      activity.device = record.device;
      activity.resource = static_cast<int32_t>(record.stream_id);
      // Drawn as CUDA kernels are: an arrow from the launching op.
      activity.flow.id = static_cast<uint32_t>(record.correlation);
      activity.flow.type = libkineto::kLinkAsyncCpuGpu;
      activity.flow.start = 0;
      activity.linked =
          linked ? linked(static_cast<int32_t>(record.correlation)) : nullptr;
      activity.log(logger);
    }
    records_.clear();
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return nullptr;
  }
  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    return {};
  }
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override {
    return std::move(buffer_);
  }

  void pushCorrelationId(uint64_t id) override {
    push_activity_correlation(id);
  }
  void popCorrelationId() override { pop_activity_correlation(); }

 private:
  std::vector<DeviceActivityRecord> records_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
};

class DeviceProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<ActivityType>& availableActivities() const override {
    return activities_;
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<ActivityType>& activity_types,
      const libkineto::Config& /*config*/) override {
    for (ActivityType type : activity_types) {
      if (activities_.count(type) != 0) {
        return std::make_unique<Session>();
      }
    }
    return nullptr;
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t /*ts_ms*/, int64_t /*duration_ms*/,
      const std::set<ActivityType>& activity_types,
      const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_ = "torch_backend";
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL,
                                     ActivityType::GPU_MEMCPY};
};

}  // namespace

void register_device_profiler() {
  static std::once_flag once;
  std::call_once(once, [] {
    torch::profiler::impl::PrivateUse1ProfilerRegistry::instance()
        .registerFactory([]() -> std::unique_ptr<libkineto::IActivityProfiler> {
          return std::make_unique<DeviceProfiler>();
        });
  });
}

#else

void register_device_profiler() {}

#endif

}  // namespace torch_backend
