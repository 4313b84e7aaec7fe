#include "FaultInjection.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <utility>

#include <torch_backend/DeviceRuntime.h>

namespace fake {
namespace {

const std::pair<const char*, Operation> kNames[] = {
    {"malloc", Operation::Malloc},
    {"host_malloc", Operation::HostMalloc},
    {"memcpy", Operation::Memcpy},
    {"memcpy_async", Operation::MemcpyAsync},
    {"stream_create", Operation::StreamCreate},
    {"stream_query", Operation::StreamQuery},
    {"stream_synchronize", Operation::StreamSynchronize},
    {"stream_wait_event", Operation::StreamWaitEvent},
    {"event_create", Operation::EventCreate},
    {"event_record", Operation::EventRecord},
    {"event_query", Operation::EventQuery},
    {"event_synchronize", Operation::EventSynchronize},
    {"synchronize_device", Operation::SynchronizeDevice},
    {"kernel", Operation::Kernel},
    {"collective", Operation::Collective},
    {"collective_hang", Operation::CollectiveHang},
};

// One operation by its exact name, or a whole group ("stream", "event").
std::vector<Operation> operations_named(const std::string& name) {
  const bool group = name == "stream" || name == "event";
  std::vector<Operation> found;
  for (const auto& [text, operation] : kNames) {
    const std::string candidate = text;
    if (group ? candidate.rfind(name + "_", 0) == 0 : candidate == name) {
      found.push_back(operation);
    }
  }
  return found;
}

}  // namespace

FaultInjector::FaultInjector() {
  const char* setting = std::getenv("TORCH_BACKEND_FAKE_FAULTS");
  if (setting == nullptr || *setting == '\0') {
    return;
  }
  std::stringstream entries(setting);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    std::stringstream fields(entry);
    std::string name, nth, times = "1";
    std::getline(fields, name, ':');
    std::getline(fields, nth, ':');
    std::getline(fields, times, ':');
    char* end = nullptr;
    const long n = std::strtol(nth.c_str(), &end, 10);
    const bool n_ok = !nth.empty() && *end == '\0';
    const long t = std::strtol(times.c_str(), &end, 10);
    if (!n_ok || *end != '\0' || !arm(name, n, t, false)) {
      std::fprintf(stderr,
                   "torch-backend-fake: TORCH_BACKEND_FAKE_FAULTS entry '%s' "
                   "is not operation:nth[:times]; ignored\n",
                   entry.c_str());
    }
  }
}

bool FaultInjector::arm(const std::string& operation, long nth, long times,
                        bool out_of_memory) {
  std::vector<Operation> operations = operations_named(operation);
  if (operations.empty() || nth < 1 || times < 1) {
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  faults_.push_back({std::move(operations), nth - 1, times, out_of_memory});
  update_armed();
  return true;
}

void FaultInjector::lose_device(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  lost_devices_.push_back(device);
  update_armed();
}

void FaultInjector::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  faults_.clear();
  update_armed();  // a lost device stays lost
}

void FaultInjector::update_armed() {
  armed_.store(!faults_.empty() || !lost_devices_.empty(),
               std::memory_order_release);
}

int FaultInjector::check_slow(Operation operation, int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (device >= 0 && std::find(lost_devices_.begin(), lost_devices_.end(),
                               device) != lost_devices_.end()) {
    ++injected_;
    return kDeviceLost;
  }
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (std::find(it->operations.begin(), it->operations.end(), operation) ==
        it->operations.end()) {
      continue;
    }
    if (it->calls_left > 0) {
      --it->calls_left;
      continue;
    }
    const int status = it->out_of_memory ? kOutOfMemoryStatus : kInjectedFault;
    if (--it->times == 0) {
      faults_.erase(it);
      update_armed();
    }
    ++injected_;
    return status;
  }
  return 0;
}

FaultInjector& faults() {
  static FaultInjector* instance = new FaultInjector();  // never destroyed
  return *instance;
}

}  // namespace fake

// The test API (ctypes, through torch_backend_fake.faults).
extern "C" TORCH_BACKEND_EXPORT int torch_backend_fake_inject_fault(
    const char* operation, long nth, long times, int out_of_memory) {
  return fake::faults().arm(operation, nth, times, out_of_memory != 0) ? 0 : -1;
}

extern "C" TORCH_BACKEND_EXPORT void torch_backend_fake_lose_device(
    int device) {
  fake::faults().lose_device(device);
}

extern "C" TORCH_BACKEND_EXPORT void torch_backend_fake_clear_faults() {
  fake::faults().clear();
}

extern "C" TORCH_BACKEND_EXPORT long torch_backend_fake_faults_injected() {
  return fake::faults().injected();
}
