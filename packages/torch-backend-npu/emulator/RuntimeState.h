// Internal to the emulator's runtime (libascendcl.so): the state its files
// share (Runtime.cpp: devices, streams, events; Memory.cpp: allocations,
// virtual memory, copies).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "Emulator.h"
#include "Streams.h"

namespace acl_emulator {

constexpr int kTagShift = 48;
constexpr std::uint64_t kTagBit = 0x4000;  // bit 62 of the address
constexpr std::uint64_t kAddressMask = (std::uint64_t{1} << kTagShift) - 1;
constexpr std::size_t kAlignment = 512;  // as aclrtMalloc aligns

struct Device {
  std::mutex mutex;
  std::map<std::uintptr_t, std::size_t> allocations;  // device address -> size
  // Virtual memory: reserved ranges and the pages mapped into them (device
  // address -> size); host_address accepts a range of contiguous pages.
  std::map<std::uintptr_t, std::size_t> reservations;
  std::map<std::uintptr_t, std::size_t> mapped;
  std::size_t used = 0;
  Stream* default_stream = nullptr;  // created with the first aclrtSetDevice
  std::set<Stream*> streams;
};

struct State {
  std::mutex mutex;
  bool initialized = false;
  int device_count = 0;
  std::size_t capacity = 0;
  std::string soc_name;
  std::unique_ptr<Device[]> devices;
  std::map<std::string, std::uint64_t> fail_at;  // call -> the failing call
  std::map<std::string, std::uint64_t> calls;
  std::set<void*> host_allocations;
  std::set<void*> physical;  // live aclrtMallocPhysical handles
};

// A physical allocation: a memory file, mapped where aclrtMapMem puts it.
struct Physical {
  int device = 0;
  std::size_t bytes = 0;
  int fd = -1;
};
constexpr std::size_t kPageSize = std::size_t{2} << 20;  // huge pages

// The process's emulator state (never destroyed: memory may be freed until
// the process ends).
State& state();
bool initialized();
bool is_device_address(const void* ptr);
int device_of_address(const void* ptr);
// Every stream of `device`, its default stream included.
std::vector<Stream*> streams_of_device(int index);

}  // namespace acl_emulator
