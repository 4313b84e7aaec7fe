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
  Status host_malloc(void** ptr, std::size_t bytes) override;
  Status host_free(void* ptr) override;
  Status memcpy_async(void* dst, const void* src, std::size_t bytes,
                      CopyKind kind, StreamHandle stream) override;
  Status stream_create(StreamHandle* stream, int priority) override;
  Status stream_destroy(StreamHandle stream) override;
  Status stream_query(StreamHandle stream, bool* complete) override;
  Status stream_synchronize(StreamHandle stream) override;
  Status stream_wait_event(StreamHandle stream, EventHandle event) override;
  Status event_create(EventHandle* event, bool enable_timing) override;
  Status event_destroy(EventHandle event) override;
  Status event_record(EventHandle event, StreamHandle stream) override;
  Status event_query(EventHandle event, bool* complete) override;
  Status event_synchronize(EventHandle event) override;
  Status event_elapsed_time(float* ms, EventHandle start,
                            EventHandle end) override;
  std::string error_text(Status status) override;
  bool is_out_of_memory(Status status) override;

  // Test knobs and observations.
  std::size_t capacity = 64 << 20;
  int mallocs = 0;
  int frees = 0;
  std::vector<std::pair<int, std::size_t>> malloc_calls;  // (device, bytes)
  std::size_t used(int device);
  // Work runs at once, but a held stream's events stay incomplete until the
  // stream is released: that is how tests keep "work in flight".
  void hold(StreamHandle stream);
  void release(StreamHandle stream);

 private:
  std::mutex mutex_;
  struct FakeEvent {
    StreamHandle stream = nullptr;
    bool complete = true;
  };
  std::map<void*, std::pair<int, std::size_t>> live_;
  std::map<StreamHandle, bool> held_;
  std::vector<FakeEvent*> events_;
  int next_stream_ = 1;
  std::size_t used_[kDevices] = {0, 0};
};

// The runtime activated once for this test process.
CountingRuntime& counting_runtime();

}  // namespace torch_backend::testing
