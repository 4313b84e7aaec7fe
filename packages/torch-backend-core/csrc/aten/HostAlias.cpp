#include <torch_backend/HostAccess.h>

#include <c10/core/CPUAllocator.h>
#include <c10/core/TensorImpl.h>

#include <torch_backend/Runtime.h>

namespace torch_backend {
namespace {

// An alias's context is the device StorageImpl it holds a reference to (no
// extra heap object per alias: the fallback makes one per device argument).
void release_alias(void* ctx) {
  c10::raw::intrusive_ptr::decref(static_cast<c10::StorageImpl*>(ctx));
}

}  // namespace

at::Tensor host_alias(const at::Tensor& t) {
  const c10::Storage& storage = t.storage();
  // The context owns a reference to the device storage: the memory lives as
  // long as any alias of it.
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  c10::raw::intrusive_ptr::incref(impl);
  c10::DataPtr data(storage.mutable_data(), impl, &release_alias,
                    c10::Device(c10::DeviceType::CPU));
  // Resizable through the CPU allocator: an out= kernel that grows its
  // output gets (routed) device memory, which the fallback moves back.
  c10::Storage alias(c10::Storage::use_byte_size_t(), storage.nbytes(),
                     std::move(data), c10::GetCPUAllocator(),
                     /*resizable=*/true);
  auto cpu = at::detail::make_tensor<c10::TensorImpl>(
      std::move(alias), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  cpu.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(),
                                                   t.storage_offset());
  cpu._set_conj(t.is_conj());
  cpu._set_neg(t.is_neg());
  return cpu;
}

at::Tensor device_view_of_alias(const at::Tensor& cpu) {
  if (!cpu.defined() || !cpu.has_storage()) {
    return {};
  }
  const c10::DataPtr& data = cpu.storage().data_ptr();
  if (data.get_deleter() != &release_alias) {
    return {};
  }
  auto* impl = static_cast<c10::StorageImpl*>(data.get_context());
  return device_tensor_like(
      c10::Storage(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(impl)),
      cpu);
}

at::Tensor device_tensor_like(const c10::Storage& storage,
                              const at::Tensor& cpu) {
  auto out = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      cpu.dtype());
  out.unsafeGetTensorImpl()->set_sizes_and_strides(cpu.sizes(), cpu.strides(),
                                                   cpu.storage_offset());
  out._set_conj(cpu.is_conj());
  out._set_neg(cpu.is_neg());
  return out;
}

}  // namespace torch_backend
