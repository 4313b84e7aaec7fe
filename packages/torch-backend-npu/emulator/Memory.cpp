// The ACL emulator's memory calls (libascendcl.so): device allocations
// (aclrtMalloc: host memory behind a tagged device address, counted against
// the device's capacity), virtual memory (reserved ranges, physical
// allocations as memory files, mapped page by page), pinned host memory and
// copies, checked as CANN checks them.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "Emulator.h"
#include "RuntimeState.h"
#include "Streams.h"

using namespace acl_emulator;

extern "C" {

aclError aclrtGetMemInfo(aclrtMemAttr /*attr*/, size_t* free, size_t* total) {
  int index = 0;
  if (const aclError status = device_of_thread("aclrtGetMemInfo", &index)) {
    return status;
  }
  State& s = state();
  Device& device = s.devices[index];
  const std::lock_guard<std::mutex> lock(device.mutex);
  *total = s.capacity;
  *free = s.capacity - device.used;
  return ACL_SUCCESS;
}

aclError aclrtMalloc(void** devPtr, size_t size,
                     aclrtMemMallocPolicy /*policy*/) {
  int index = 0;
  if (const aclError status = device_of_thread("aclrtMalloc", &index)) {
    return status;
  }
  if (devPtr == nullptr || size == 0) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: null pointer or size 0");
  }
  if (injected_fault("aclrtMalloc")) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
  State& s = state();
  Device& device = s.devices[index];
  const std::size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  {
    const std::lock_guard<std::mutex> lock(device.mutex);
    if (device.used + rounded > s.capacity) {
      return fail(ACL_ERROR_RT_MEMORY_ALLOCATION,
                  "aclrtMalloc: out of memory on device " +
                      std::to_string(index) + ": requested " +
                      std::to_string(size) + " bytes, " +
                      std::to_string(device.used) + " of " +
                      std::to_string(s.capacity) + " in use");
    }
    device.used += rounded;
  }
  void* host = nullptr;
  if (posix_memalign(&host, kAlignment, rounded) != 0) {
    const std::lock_guard<std::mutex> lock(device.mutex);
    device.used -= rounded;
    return fail(ACL_ERROR_RT_MEMORY_ALLOCATION,
                "aclrtMalloc: host memory exhausted");
  }
  const std::uintptr_t address =
      reinterpret_cast<std::uintptr_t>(host) |
      ((kTagBit | static_cast<std::uint64_t>(index)) << kTagShift);
  {
    const std::lock_guard<std::mutex> lock(device.mutex);
    device.allocations.emplace(address, rounded);
  }
  *devPtr = reinterpret_cast<void*>(address);
  return ACL_SUCCESS;
}

aclError aclrtFree(void* devPtr) {
  if (!is_device_address(devPtr) ||
      device_of_address(devPtr) >= state().device_count) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: not a device address");
  }
  Device& device = state().devices[device_of_address(devPtr)];
  const auto address = reinterpret_cast<std::uintptr_t>(devPtr);
  {
    const std::lock_guard<std::mutex> lock(device.mutex);
    auto it = device.allocations.find(address);
    if (it == device.allocations.end()) {
      return fail(ACL_ERROR_INVALID_PARAM,
                  "aclrtFree: not the start of a live allocation");
    }
    device.used -= it->second;
    device.allocations.erase(it);
  }
  std::free(reinterpret_cast<void*>(address & kAddressMask));
  return ACL_SUCCESS;
}

aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp* prop,
                                          aclrtMemGranularityOptions,
                                          size_t* granularity) {
  if (!initialized()) {
    return fail(
        ACL_ERROR_UNINITIALIZE,
        "aclrtMemGetAllocationGranularity: aclInit has not been called");
  }
  if (prop == nullptr || granularity == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtMemGetAllocationGranularity: null argument");
  }
  *granularity = kPageSize;
  return ACL_SUCCESS;
}

aclError aclrtReserveMemAddress(void** virPtr, size_t size, size_t,
                                void* /*expectPtr*/, uint64_t) {
  int index = 0;
  if (const aclError status =
          device_of_thread("aclrtReserveMemAddress", &index)) {
    return status;
  }
  if (virPtr == nullptr || size == 0 || size % kPageSize != 0) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtReserveMemAddress: size must be a non-zero multiple of "
                "the granularity");
  }
  void* host = mmap(nullptr, size, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (host == MAP_FAILED) {
    return fail(ACL_ERROR_RT_MEMORY_ALLOCATION,
                "aclrtReserveMemAddress: no address space left");
  }
  const std::uintptr_t address =
      reinterpret_cast<std::uintptr_t>(host) |
      ((kTagBit | static_cast<std::uint64_t>(index)) << kTagShift);
  Device& device = state().devices[index];
  const std::lock_guard<std::mutex> lock(device.mutex);
  device.reservations.emplace(address, size);
  *virPtr = reinterpret_cast<void*>(address);
  return ACL_SUCCESS;
}

aclError aclrtReleaseMemAddress(void* virPtr) {
  if (!is_device_address(virPtr) ||
      device_of_address(virPtr) >= state().device_count) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtReleaseMemAddress: not a device address");
  }
  Device& device = state().devices[device_of_address(virPtr)];
  const auto address = reinterpret_cast<std::uintptr_t>(virPtr);
  const std::lock_guard<std::mutex> lock(device.mutex);
  auto range = device.reservations.find(address);
  if (range == device.reservations.end()) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtReleaseMemAddress: not a reserved range");
  }
  auto page = device.mapped.lower_bound(address);
  if (page != device.mapped.end() && page->first < address + range->second) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtReleaseMemAddress: the range still has mapped memory");
  }
  munmap(reinterpret_cast<void*>(address & kAddressMask), range->second);
  device.reservations.erase(range);
  return ACL_SUCCESS;
}

aclError aclrtMallocPhysical(aclrtDrvMemHandle* handle, size_t size,
                             const aclrtPhysicalMemProp* prop, uint64_t) {
  State& s = state();
  if (!initialized()) {
    return fail(ACL_ERROR_UNINITIALIZE,
                "aclrtMallocPhysical: aclInit has not been called");
  }
  if (handle == nullptr || prop == nullptr || size == 0 ||
      size % kPageSize != 0 ||
      prop->location.type != ACL_MEM_LOCATION_TYPE_DEVICE ||
      prop->location.id >= static_cast<uint32_t>(s.device_count)) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtMallocPhysical: bad size or memory properties");
  }
  if (injected_fault("aclrtMallocPhysical")) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
  const int index = static_cast<int>(prop->location.id);
  Device& device = s.devices[index];
  {
    const std::lock_guard<std::mutex> lock(device.mutex);
    if (device.used + size > s.capacity) {
      return fail(ACL_ERROR_RT_MEMORY_ALLOCATION,
                  "aclrtMallocPhysical: out of memory on device " +
                      std::to_string(index) + ": requested " +
                      std::to_string(size) + " bytes, " +
                      std::to_string(device.used) + " of " +
                      std::to_string(s.capacity) + " in use");
    }
    device.used += size;
  }
  const int fd = memfd_create("acl_emulator_physical", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
    if (fd >= 0) {
      close(fd);
    }
    const std::lock_guard<std::mutex> lock(device.mutex);
    device.used -= size;
    return fail(ACL_ERROR_RT_MEMORY_ALLOCATION,
                "aclrtMallocPhysical: host memory exhausted");
  }
  auto* physical = new Physical{index, size, fd};
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    s.physical.insert(physical);
  }
  *handle = physical;
  return ACL_SUCCESS;
}

aclError aclrtFreePhysical(aclrtDrvMemHandle handle) {
  State& s = state();
  auto* physical = static_cast<Physical*>(handle);
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    if (s.physical.erase(physical) == 0) {
      return fail(ACL_ERROR_INVALID_PARAM,
                  "aclrtFreePhysical: not a live physical allocation");
    }
  }
  Device& device = s.devices[physical->device];
  {
    const std::lock_guard<std::mutex> lock(device.mutex);
    device.used -= physical->bytes;
  }
  close(physical->fd);
  delete physical;
  return ACL_SUCCESS;
}

aclError aclrtMapMem(void* virPtr, size_t size, size_t offset,
                     aclrtDrvMemHandle handle, uint64_t) {
  State& s = state();
  auto* physical = static_cast<Physical*>(handle);
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    if (s.physical.count(physical) == 0) {
      return fail(ACL_ERROR_INVALID_PARAM,
                  "aclrtMapMem: not a live physical allocation");
    }
  }
  if (!is_device_address(virPtr) ||
      device_of_address(virPtr) != physical->device || offset != 0 ||
      size != physical->bytes) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtMapMem: the address, size or offset does not match the "
                "physical allocation");
  }
  Device& device = s.devices[physical->device];
  const auto address = reinterpret_cast<std::uintptr_t>(virPtr);
  const std::lock_guard<std::mutex> lock(device.mutex);
  auto range = device.reservations.upper_bound(address);
  if (range == device.reservations.begin() ||
      address + size > std::prev(range)->first + std::prev(range)->second) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtMapMem: not inside a reserved range");
  }
  void* host = reinterpret_cast<void*>(address & kAddressMask);
  if (mmap(host, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
           physical->fd, 0) != host) {
    return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMapMem: mmap failed");
  }
  device.mapped[address] = size;
  return ACL_SUCCESS;
}

aclError aclrtUnmapMem(void* virPtr) {
  if (!is_device_address(virPtr) ||
      device_of_address(virPtr) >= state().device_count) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtUnmapMem: not a device address");
  }
  Device& device = state().devices[device_of_address(virPtr)];
  const auto address = reinterpret_cast<std::uintptr_t>(virPtr);
  const std::lock_guard<std::mutex> lock(device.mutex);
  auto page = device.mapped.find(address);
  if (page == device.mapped.end()) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtUnmapMem: nothing is mapped at this address");
  }
  // Back to reserved: inaccessible, holding no memory.
  void* host = reinterpret_cast<void*>(address & kAddressMask);
  mmap(host, page->second, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  device.mapped.erase(page);
  return ACL_SUCCESS;
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  if (!initialized()) {
    return fail(ACL_ERROR_UNINITIALIZE,
                "aclrtMallocHost: aclInit has not been called");
  }
  if (injected_fault("aclrtMallocHost")) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
  if (posix_memalign(hostPtr, 4096, std::max<size_t>(size, 1)) != 0) {
    return fail(ACL_ERROR_RT_MEMORY_ALLOCATION,
                "aclrtMallocHost: out of host memory");
  }
  State& s = state();
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.host_allocations.insert(*hostPtr);
  return ACL_SUCCESS;
}

aclError aclrtFreeHost(void* hostPtr) {
  State& s = state();
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    if (s.host_allocations.erase(hostPtr) == 0) {
      return fail(ACL_ERROR_INVALID_PARAM,
                  "aclrtFreeHost: not from aclrtMallocHost");
    }
  }
  std::free(hostPtr);
  return ACL_SUCCESS;
}

namespace {

// Resolves both sides of a copy of `count` bytes, checking them against
// `kind`: device sides must lie in live allocations, host sides must not be
// device addresses.
aclError copy_ends(void* dst, size_t destMax, const void* src, size_t count,
                   aclrtMemcpyKind kind, const char* call, void** host_dst,
                   const void** host_src) {
  if (count > destMax) {
    return fail(ACL_ERROR_INVALID_PARAM,
                std::string(call) + ": count exceeds destMax");
  }
  const bool device_dst =
      kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  const bool device_src =
      kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  if (device_dst) {
    *host_dst = host_address(dst, count, call);
    if (*host_dst == nullptr) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
  } else if (is_device_address(dst)) {
    return fail(ACL_ERROR_RT_PARAM_INVALID,
                std::string(call) + ": device address as host destination");
  } else {
    *host_dst = dst;
  }
  if (device_src) {
    *host_src = host_address(src, count, call);
    if (*host_src == nullptr) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
  } else if (is_device_address(src)) {
    return fail(ACL_ERROR_RT_PARAM_INVALID,
                std::string(call) + ": device address as host source");
  } else {
    *host_src = src;
  }
  return ACL_SUCCESS;
}

}  // namespace

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count,
                     aclrtMemcpyKind kind) {
  int index = 0;
  if (const aclError status = device_of_thread("aclrtMemcpy", &index)) {
    return status;
  }
  if (injected_fault("aclrtMemcpy")) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
  // Synchronous: not allowed while a stream of the device is captured.
  for (Stream* stream : streams_of_device(index)) {
    if (const aclError refused = refuse_if_capturing(stream, "aclrtMemcpy")) {
      return refused;
    }
  }
  void* to = nullptr;
  const void* from = nullptr;
  if (const aclError status = copy_ends(dst, destMax, src, count, kind,
                                        "aclrtMemcpy", &to, &from)) {
    return status;
  }
  std::memmove(to, from, count);
  return ACL_SUCCESS;
}

aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src,
                          size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  int index = 0;
  if (const aclError status = device_of_thread("aclrtMemcpyAsync", &index)) {
    return status;
  }
  if (injected_fault("aclrtMemcpyAsync")) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
  void* to = nullptr;
  const void* from = nullptr;
  if (const aclError status = copy_ends(dst, destMax, src, count, kind,
                                        "aclrtMemcpyAsync", &to, &from)) {
    return status;
  }
  stream_of(stream, index)->push([to, from, count] {
    std::memmove(to, from, count);
    return ACL_SUCCESS;
  });
  return ACL_SUCCESS;
}

}  // extern "C"
