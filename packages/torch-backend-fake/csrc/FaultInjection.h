// Fault injection for the fake runtime: makes chosen runtime calls fail, as a
// real driver's do (a failed allocation or copy, a lost device), so core's
// error paths can be tested without hardware.
//
// Armed by TORCH_BACKEND_FAKE_FAULTS="operation:nth[:times],..." at start, or
// at any time through the C functions below (torch_backend_fake.faults wraps
// them): the nth call of `operation` from now fails, and the `times - 1` calls
// after it (default 1: a transient fault). Operations are the runtime's method
// names (malloc, host_malloc, memcpy, memcpy_async, stream_create,
// stream_query, stream_synchronize, stream_wait_event, event_create,
// event_record, event_query, event_synchronize, synchronize_device), "kernel"
// (a kernel launch: the kernel fails later, on its stream, and the next
// synchronising call reports it), "collective" (a call of fake's collective
// library fails on its stream: its communicator's asynchronous error),
// "collective_hang" (such a call never completes, as on a hung rank, until
// its communicator is aborted), or "stream" / "event" for every call of that
// group. A lost device fails every
// call that would run on it until the process ends; releasing memory and
// destroying streams and events keeps working, so teardown does.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace fake {

enum class Operation {
  Malloc,
  HostMalloc,
  Memcpy,
  MemcpyAsync,
  StreamCreate,
  StreamQuery,
  StreamSynchronize,
  StreamWaitEvent,
  EventCreate,
  EventRecord,
  EventQuery,
  EventSynchronize,
  SynchronizeDevice,
  Kernel,  // a kernel launch: the kernel fails on its stream, asynchronously
  Collective,      // a collective or send/recv fails on its stream
  CollectiveHang,  // a collective never completes (a hung rank) until aborted
};

// Statuses a fault returns: a failed allocation is the machine's own
// out-of-memory code (fake::Code in FakeHardware.h takes its value from here),
// the other two are left free by the machine's codes.
constexpr int kOutOfMemoryStatus = 1;
constexpr int kInjectedFault = 7;
constexpr int kDeviceLost = 8;

class FaultInjector {
 public:
  // Reads TORCH_BACKEND_FAKE_FAULTS; a malformed setting is reported on
  // stderr and ignored.
  FaultInjector();

  // 0, or the status the call fails with. `device`: the device the call runs
  // on (-1: none, e.g. host memory).
  int check(Operation operation, int device) {
    if (!armed_.load(std::memory_order_acquire)) {
      return 0;
    }
    return check_slow(operation, device);
  }

  // False for an unknown operation name, nth < 1 or times < 1.
  bool arm(const std::string& operation, long nth, long times,
           bool out_of_memory);
  void lose_device(int device);
  void clear();
  long injected() const { return injected_.load(); }

 private:
  struct Fault {
    std::vector<Operation> operations;
    long calls_left;  // calls before the failing one
    long times;
    bool out_of_memory;
  };

  int check_slow(Operation operation, int device);
  void update_armed();

  std::mutex mutex_;
  std::atomic<bool> armed_{false};
  std::atomic<long> injected_{0};
  std::vector<Fault> faults_;
  std::vector<int> lost_devices_;
};

FaultInjector& faults();

}  // namespace fake
