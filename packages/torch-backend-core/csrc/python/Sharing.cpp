// Device tensors through torch.multiprocessing (torch_backend/_sharing.py
// pickles them with these): the producer names the runtime allocation holding
// a storage (DeviceRuntime::ipc_get_handle, after its pending work is done);
// the consumer maps it (ipc_open_handle) and gets a tensor over it, handed to
// Python as a DLPack capsule, whose deleter unmaps it (ipc_close_handle).
#include "Sharing.h"

#include <ATen/DLConvertor.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>

#include <cstdint>
#include <string>

#include <torch_backend/Allocator.h>
#include <torch_backend/Runtime.h>
#include "../runtime/Warn.h"

namespace py = pybind11;

namespace torch_backend {
namespace {

// (handle, device, offset of the storage in the allocation, bytes).
py::tuple share_storage(std::uintptr_t storage_impl) {
  const auto* impl = reinterpret_cast<const c10::StorageImpl*>(storage_impl);
  const c10::DataPtr& data = impl->data_ptr();
  const auto device = data.device().index();
  if (impl->nbytes() == 0) {
    return py::make_tuple(py::bytes(), device, 0, 0);
  }
  const DeviceSegment segment = device_segment_of(data);
  c10::DeviceGuard guard(data.device());
  // The consumer must see every write already enqueued.
  TORCH_BACKEND_CHECK(active_runtime().synchronize_device());
  IpcHandle handle;
  const Status status = active_runtime().ipc_get_handle(segment.base, &handle);
  TORCH_CHECK(status != kNotSupported, "'", c10::get_privateuse1_backend(),
              "' cannot share device memory with other processes: its runtime "
              "has no inter-process memory handles (DeviceRuntime::"
              "ipc_get_handle); send CPU tensors instead (tensor.cpu())");
  TORCH_BACKEND_CHECK(status);
  const auto offset =
      static_cast<std::int64_t>(static_cast<const char*>(data.get()) -
                                static_cast<const char*>(segment.base));
  return py::make_tuple(py::bytes(reinterpret_cast<const char*>(handle.bytes),
                                  sizeof(handle.bytes)),
                        device, offset,
                        static_cast<std::int64_t>(impl->nbytes()));
}

void delete_capsule(PyObject* capsule) {
  // Not consumed by torch.from_dlpack (renamed "used_dltensor" if it was).
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* managed = static_cast<DLManagedTensor*>(
        PyCapsule_GetPointer(capsule, "dltensor"));
    if (managed != nullptr && managed->deleter != nullptr) {
      managed->deleter(managed);
    }
  }
}

// A uint8 tensor over `bytes` bytes at `offset` in the shared allocation,
// as a DLPack capsule for torch.from_dlpack.
py::object open_shared(const std::string& handle_bytes, int device,
                       std::int64_t offset, std::int64_t bytes) {
  const c10::Device where(c10::DeviceType::PrivateUse1,
                          static_cast<c10::DeviceIndex>(device));
  check_device_index(device);
  IpcHandle handle;
  TORCH_CHECK(handle_bytes.size() == sizeof(handle.bytes),
              "malformed inter-process memory handle");
  std::copy(handle_bytes.begin(), handle_bytes.end(), handle.bytes);
  c10::DeviceGuard guard(where);
  void* base = nullptr;
  TORCH_BACKEND_CHECK(active_runtime().ipc_open_handle(handle, &base));
  at::Tensor tensor =
      at::for_blob(static_cast<char*>(base) + offset, {bytes})
          .deleter([base, where](void*) {
            // Work still queued on the memory must finish before it is
            // unmapped (it is not from the caching allocator, which would
            // order its reuse on the stream).
            c10::DeviceGuard close_guard(where);
            Status status = active_runtime().synchronize_device();
            if (status == kSuccess) {
              status = active_runtime().ipc_close_handle(base);
            }
            if (status != kSuccess) {
              TORCH_BACKEND_WARN("failed to release shared device memory: ",
                                 active_runtime().error_text(status));
            }
          })
          .options(at::TensorOptions().dtype(at::kByte).device(where))
          .target_device(where)
          .make_tensor();
  DLManagedTensor* managed = at::toDLPack(tensor);
  return py::reinterpret_steal<py::object>(
      PyCapsule_New(managed, "dltensor", &delete_capsule));
}

}  // namespace

void bind_sharing(py::module_& m) {
  m.def("_share_storage", &share_storage, py::arg("storage_cdata"));
  m.def("_open_shared", &open_shared, py::arg("handle"), py::arg("device"),
        py::arg("offset"), py::arg("nbytes"));
}

}  // namespace torch_backend
