// A device runtime for tests: host memory, configurable capacity, and counters
// for every call core makes into it.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include <torch_backend/DeviceRuntime.h>

namespace torch_backend::testing {

class CountingRuntime final : public DeviceRuntime {
 public:
  static constexpr Status kOom = 7;
  static constexpr Status kBadDevice = 8;
  static constexpr int kDevices = 2;

  Status device_count(int* count) override;
  Status get_device(int* device) override;
  Status set_device(int device) override;
  Status synchronize_device() override;
  Status device_properties(int device, DeviceProperties* props) override;
  Status mem_get_info(std::size_t* free_bytes,
                      std::size_t* total_bytes) override;
  Status malloc(void** ptr, std::size_t bytes) override;
  Status free(void* ptr) override;
  Status memcpy(void* dst, const void* src, std::size_t bytes,
                CopyKind kind) override;
  Status memset(void* dst, int value, std::size_t bytes) override;
  std::string error_text(Status status) override;
  bool is_out_of_memory(Status status) override;

  // Test knobs and observations.
  std::size_t capacity = 1 << 20;
  int mallocs = 0;
  int frees = 0;
  std::vector<std::pair<int, std::size_t>> malloc_calls;  // (device, bytes)
  std::size_t used(int device);

 private:
  std::mutex mutex_;
  std::map<void*, std::pair<int, std::size_t>> live_;
  std::size_t used_[kDevices] = {0, 0};
};

// The runtime activated once for this test process.
CountingRuntime& counting_runtime();

}  // namespace torch_backend::testing
