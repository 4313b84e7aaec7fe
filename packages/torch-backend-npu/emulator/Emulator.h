// Internal to the ACL emulator: what its three libraries share. The runtime
// (libascendcl.so) owns devices, memory and streams; the descriptor library
// (libnnopbase.so) owns aclTensor and friends; the operator library
// (libopapi.so) computes aclnn operators on the host, on the runtime's
// streams.
//
// Device memory is host memory the host must not touch: a device address is
// its host address with a tag in bits 48-62 (the device index), which makes it
// non-canonical on x86-64, so any host dereference faults. Only the emulator
// translates it back (host_address), after checking it lies inside a live
// allocation.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

#define ACL_EMULATOR_API __attribute__((visibility("default")))

namespace acl_emulator {

// The calling thread's aclGetRecentErrMsg text; returns `code`.
ACL_EMULATOR_API aclError fail(aclError code, const std::string& message);

// The host address of device memory [device_ptr, device_ptr + bytes), or
// nullptr (with fail() called) when that range is not inside one live
// allocation.
ACL_EMULATOR_API void* host_address(const void* device_ptr, std::size_t bytes,
                                    const char* call);

// Enqueues `task` on `stream` (nullptr: the current device's default
// stream). A task's non-zero status becomes the stream's error, reported by
// the next synchronisation, as the hardware reports a failed kernel.
ACL_EMULATOR_API aclError enqueue(aclrtStream stream,
                                  std::function<aclError()> task,
                                  const char* call);

// Whether a fault was injected into the Nth call of `call`
// (ACL_EMULATOR_FAIL=name:N[,name:N...]); calls fail() when it was.
ACL_EMULATOR_API bool injected_fault(const char* call);

}  // namespace acl_emulator

// The descriptors of libnnopbase, as its operators read them.
struct aclTensor {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;  // in elements
  aclDataType dtype = ACL_FLOAT;
  aclFormat format = ACL_FORMAT_ND;
  void* data = nullptr;  // device address of the storage
};

struct aclScalar {
  aclDataType dtype = ACL_FLOAT;
  unsigned char bytes[8] = {};
};

struct aclIntArray {
  std::vector<int64_t> values;
};

struct aclBoolArray {
  std::vector<bool> values;
};
