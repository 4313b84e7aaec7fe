// The gpu device's virtual memory calls (DeviceRuntime::vm_*, for core's
// expandable segments): the CUDA driver's cuMemAddressReserve, cuMemCreate,
// cuMemMap and cuMemSetAccess, as PyTorch's own CUDA allocator uses them.
//
// The driver library (libcuda.so.1) comes with the GPU's driver, not with the
// toolkit: it is opened at first use, and without it every call reports
// kNotSupported (core then keeps ordinary segments). Driver statuses are
// returned offset by kDriverStatusBase, apart from out-of-memory, which is
// returned as the runtime's cudaErrorMemoryAllocation.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <string>

#include "CudaBackend.h"

namespace gpu {
namespace {

using torch_backend::kNotSupported;
using torch_backend::kSuccess;
using torch_backend::Status;

struct Driver {
  CUresult (*get_error_name)(CUresult, const char**) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
  CUresult (*granularity)(size_t*, const CUmemAllocationProp*,
                          CUmemAllocationGranularity_flags) = nullptr;
  CUresult (*reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr,
                      unsigned long long) = nullptr;
  CUresult (*address_free)(CUdeviceptr, size_t) = nullptr;
  CUresult (*create)(CUmemGenericAllocationHandle*, size_t,
                     const CUmemAllocationProp*, unsigned long long) = nullptr;
  CUresult (*release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                  unsigned long long) = nullptr;
  CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*,
                         size_t) = nullptr;
  CUresult (*unmap)(CUdeviceptr, size_t) = nullptr;
};

template <typename Function>
bool find(void* library, const char* name, Function* function) {
  *function = reinterpret_cast<Function>(dlsym(library, name));
  return *function != nullptr;
}

// Null when the driver or one of its calls is missing.
const Driver* driver() {
  static const Driver* loaded = []() -> const Driver* {
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      return nullptr;
    }
    auto* d = new Driver();
    const bool complete =
        find(library, "cuGetErrorName", &d->get_error_name) &&
        find(library, "cuGetErrorString", &d->get_error_string) &&
        find(library, "cuMemGetAllocationGranularity", &d->granularity) &&
        find(library, "cuMemAddressReserve", &d->reserve) &&
        find(library, "cuMemAddressFree", &d->address_free) &&
        find(library, "cuMemCreate", &d->create) &&
        find(library, "cuMemRelease", &d->release) &&
        find(library, "cuMemMap", &d->map) &&
        find(library, "cuMemSetAccess", &d->set_access) &&
        find(library, "cuMemUnmap", &d->unmap);
    if (!complete) {
      delete d;
      return nullptr;
    }
    return d;
  }();
  return loaded;
}

Status status_of(CUresult result) {
  if (result == CUDA_SUCCESS) {
    return kSuccess;
  }
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    return cudaErrorMemoryAllocation;
  }
  return kDriverStatusBase + static_cast<int>(result);
}

// Pinned memory of the current device.
CUmemAllocationProp device_memory() {
  int device = 0;
  (void)cudaGetDevice(&device);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

CUdeviceptr address_of(void* address) {
  return reinterpret_cast<CUdeviceptr>(address);
}

}  // namespace

Status vm_granularity(std::size_t* bytes) {
  const Driver* d = driver();
  if (d == nullptr) {
    return kNotSupported;
  }
  const CUmemAllocationProp prop = device_memory();
  return status_of(
      d->granularity(bytes, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
}

Status vm_reserve(void** base, std::size_t bytes) {
  const Driver* d = driver();
  if (d == nullptr) {
    return kNotSupported;
  }
  CUdeviceptr reserved = 0;
  const Status status = status_of(d->reserve(&reserved, bytes, 0, 0, 0));
  *base = reinterpret_cast<void*>(reserved);
  return status;
}

Status vm_release(void* base, std::size_t bytes) {
  const Driver* d = driver();
  return d == nullptr ? kNotSupported
                      : status_of(d->address_free(address_of(base), bytes));
}

Status vm_create(void** handle, std::size_t bytes) {
  const Driver* d = driver();
  if (d == nullptr) {
    return kNotSupported;
  }
  const CUmemAllocationProp prop = device_memory();
  CUmemGenericAllocationHandle created = 0;
  const Status status = status_of(d->create(&created, bytes, &prop, 0));
  *handle = reinterpret_cast<void*>(created);
  return status;
}

Status vm_destroy(void* handle) {
  const Driver* d = driver();
  return d == nullptr
             ? kNotSupported
             : status_of(d->release(
                   reinterpret_cast<CUmemGenericAllocationHandle>(handle)));
}

Status vm_map(void* address, std::size_t bytes, void* handle) {
  const Driver* d = driver();
  if (d == nullptr) {
    return kNotSupported;
  }
  const Status mapped = status_of(
      d->map(address_of(address), bytes, 0,
             reinterpret_cast<CUmemGenericAllocationHandle>(handle), 0));
  if (mapped != kSuccess) {
    return mapped;
  }
  // Mapped memory is accessible to no device until access is granted.
  CUmemAccessDesc access{};
  access.location = device_memory().location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  const Status granted =
      status_of(d->set_access(address_of(address), bytes, &access, 1));
  if (granted != kSuccess) {
    (void)d->unmap(address_of(address), bytes);
  }
  return granted;
}

Status vm_unmap(void* address, std::size_t bytes) {
  const Driver* d = driver();
  return d == nullptr ? kNotSupported
                      : status_of(d->unmap(address_of(address), bytes));
}

std::string driver_status_text(int status) {
  const auto result = static_cast<CUresult>(status - kDriverStatusBase);
  const char* name = "CUDA_ERROR_UNKNOWN";
  const char* text = "unknown CUDA driver error";
  if (const Driver* d = driver()) {
    (void)d->get_error_name(result, &name);
    (void)d->get_error_string(result, &text);
  }
  return std::string(name) + ": " + text;
}

}  // namespace gpu
