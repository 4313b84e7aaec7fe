// Device symbols of the `fake` device: a simulated accelerator whose device
// memory is host memory owned by this runtime (never the CPU allocator), so
// device and CPU tensors are genuinely different storages.
//
// Environment:
//   TORCH_BACKEND_FAKE_DEVICE_COUNT  number of devices (default 2)
//   TORCH_BACKEND_FAKE_MEMORY_MB     capacity of each device (default 65536)
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch_backend/DeviceRuntime.h>

namespace {

using torch_backend::CopyKind;
using torch_backend::DeviceProperties;
using torch_backend::kSuccess;
using torch_backend::Status;

enum FakeStatus : Status {
  kOutOfMemory = 1,
  kInvalidDevice = 2,
  kInvalidPointer = 3,
  kInvalidValue = 4,
};

constexpr std::size_t kAlignment = 64;

long env_long(const char* name, long fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    return fallback;
  }
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return (*end == '\0' && value >= 0) ? value : fallback;
}

class FakeRuntime final : public torch_backend::DeviceRuntime {
 public:
  FakeRuntime()
      : used_(env_long("TORCH_BACKEND_FAKE_DEVICE_COUNT", 2), 0),
        capacity_(static_cast<std::size_t>(
                      env_long("TORCH_BACKEND_FAKE_MEMORY_MB", 65536))
                  << 20) {}

  Status device_count(int* count) override {
    *count = static_cast<int>(used_.size());
    return kSuccess;
  }

  Status get_device(int* device) override {
    *device = current_device_;
    return kSuccess;
  }

  Status set_device(int device) override {
    if (device < 0 || device >= static_cast<int>(used_.size())) {
      return kInvalidDevice;
    }
    current_device_ = device;
    return kSuccess;
  }

  Status synchronize_device() override { return kSuccess; }

  Status device_properties(int device, DeviceProperties* props) override {
    if (device < 0 || device >= static_cast<int>(used_.size())) {
      return kInvalidDevice;
    }
    props->name = "Fake Device " + std::to_string(device) + " (host memory)";
    props->total_memory = capacity_;
    props->capability = "fake-1.0";
    return kSuccess;
  }

  Status mem_get_info(std::size_t* free_bytes,
                      std::size_t* total_bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    *total_bytes = capacity_;
    *free_bytes = capacity_ - used_[current_device_];
    return kSuccess;
  }

  Status malloc(void** ptr, std::size_t bytes) override {
    if (bytes == 0) {
      return kInvalidValue;
    }
    const std::size_t rounded =
        (bytes + kAlignment - 1) / kAlignment * kAlignment;
    std::lock_guard<std::mutex> lock(mutex_);
    if (rounded > capacity_ - used_[current_device_]) {
      return kOutOfMemory;
    }
    void* memory = std::aligned_alloc(kAlignment, rounded);
    if (memory == nullptr) {
      return kOutOfMemory;
    }
    used_[current_device_] += rounded;
    blocks_[memory] = Block{current_device_, rounded};
    *ptr = memory;
    return kSuccess;
  }

  Status free(void* ptr) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(ptr);
    if (it == blocks_.end()) {
      return kInvalidPointer;
    }
    used_[it->second.device] -= it->second.bytes;
    blocks_.erase(it);
    std::free(ptr);
    return kSuccess;
  }

  Status memcpy(void* dst, const void* src, std::size_t bytes,
                CopyKind /*kind*/) override {
    std::memcpy(dst, src, bytes);
    return kSuccess;
  }

  Status memset(void* dst, int value, std::size_t bytes) override {
    std::memset(dst, value, bytes);
    return kSuccess;
  }

  std::string error_text(Status status) override {
    switch (status) {
      case kSuccess:
        return "no error";
      case kOutOfMemory:
        return "out of fake device memory";
      case kInvalidDevice:
        return "invalid device ordinal";
      case kInvalidPointer:
        return "pointer was not allocated by the fake runtime";
      case kInvalidValue:
        return "invalid argument";
      default:
        return "unknown fake runtime status " + std::to_string(status);
    }
  }

  bool is_out_of_memory(Status status) override {
    return status == kOutOfMemory;
  }

  torch_backend::Capabilities capabilities() override {
    return {/*host_addressable_memory=*/true};
  }

 private:
  struct Block {
    int device;
    std::size_t bytes;
  };

  static thread_local int current_device_;
  std::mutex mutex_;
  std::vector<std::size_t> used_;
  const std::size_t capacity_;
  std::unordered_map<void*, Block> blocks_;
};

thread_local int FakeRuntime::current_device_ = 0;

}  // namespace

TORCH_BACKEND_DEFINE_DEVICE_RUNTIME(FakeRuntime)
