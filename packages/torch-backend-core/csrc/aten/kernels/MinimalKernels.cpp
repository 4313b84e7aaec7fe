// The minimal kernels every device needs: factories, views, resize, set_,
// copies and scalar reads. Everything else reaches the CPU fallback.
#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_local_scalar_dense.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/new_empty_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cstring>

#include <torch_backend/Allocator.h>
#include <torch_backend/HostAccess.h>
#include <torch_backend/Runtime.h>

#include "../../memory/HostAllocator.h"
#include "../../runtime/Capture.h"
#include "../../runtime/Streams.h"
#include "../Registration.h"
#include "../bringup/LaunchBlocking.h"
#include "Copy.h"

namespace torch_backend {
namespace {

using at::IntArrayRef;
using at::Tensor;
using c10::Device;
using c10::DeviceType;

c10::DispatchKeySet device_keys() {
  return c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
}

// Out-of-tree kernels get no generated DeviceGuard: factories must select the
// requested device themselves, or `fake:1` would allocate on the current one.
std::optional<Device> indexed(std::optional<Device> device) {
  if (device.has_value() && device->has_index()) {
    return device;
  }
  return std::nullopt;
}

Tensor empty_memory_format(IntArrayRef size,
                           std::optional<at::ScalarType> dtype,
                           std::optional<at::Layout> layout,
                           std::optional<Device> device,
                           std::optional<bool> pin_memory,
                           std::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK(!pin_memory.value_or(false),
              "only CPU tensors can be pinned, not device tensors");
  c10::OptionalDeviceGuard guard(indexed(device));
  return at::detail::empty_generic(size, device_allocator(), device_keys(),
                                   c10::dtype_or_default(dtype), memory_format);
}

Tensor empty_strided(IntArrayRef size, IntArrayRef stride,
                     std::optional<at::ScalarType> dtype,
                     std::optional<at::Layout> layout,
                     std::optional<Device> device,
                     std::optional<bool> pin_memory) {
  TORCH_CHECK(!pin_memory.value_or(false),
              "only CPU tensors can be pinned, not device tensors");
  c10::OptionalDeviceGuard guard(indexed(device));
  return at::detail::empty_strided_generic(size, stride, device_allocator(),
                                           device_keys(),
                                           c10::dtype_or_default(dtype));
}

// Host code copying host-addressable device memory. Large copies run the
// CPU's own copy kernel on byte views (its thread pool may still be spinning
// from the previous CPU op; a copy engine's own threads would compete with
// it), small ones are a memcpy.
void host_memcpy(void* dst, const void* src, size_t bytes) {
  constexpr size_t kKernelFrom = 1 << 20;
  if (bytes < kKernelFrom) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const int64_t n = static_cast<int64_t>(bytes);
  at::from_blob(dst, {n}, at::kByte)
      .copy_(at::from_blob(const_cast<void*>(src), {n}, at::kByte));
}

// Enqueues a copy on the current stream of `device`. It stays asynchronous
// only where that is safe, as with CUDA: device-to-device always, and host
// transfers with non_blocking=True from/to pinned memory (which is then kept
// from reuse until the copy is done). Otherwise the copy is synchronous: the
// caller may free pageable host memory as soon as this returns *or throws*,
// so no copy of it may still be queued then (an enqueued copy followed by a
// failed stream_synchronize would write into freed memory).
void copy_bytes(void* dst, const void* src, size_t bytes, CopyKind kind,
                c10::Device device, bool non_blocking) {
  c10::DeviceGuard guard(device);
  const void* host = kind == CopyKind::HostToDevice ? src : dst;
  const bool pinned_async =
      kind != CopyKind::DeviceToDevice && non_blocking && is_pinned(host);
  // In a graph, copies are the stream's work, never the host's.
  const bool capturing = is_capturing(current_stream(device.index()));
  if (capturing && kind != CopyKind::DeviceToDevice && !pinned_async) {
    refuse_while_capturing(
        current_stream(device.index()),
        "aten::copy_ between the host and the device from pageable memory or "
        "with non_blocking=False (a synchronous copy)",
        "copy pinned memory with non_blocking=True inside the captured "
        "region, or copy outside it");
  }
  if (!pinned_async && !capturing &&
      active_capabilities().host_addressable_memory) {
    // Done in stream order all the same: after the stream's earlier work,
    // before anything enqueued later (as the CPU fallback runs kernels).
    wait_for_host_access(device);
    host_memcpy(dst, src, bytes);
    return;
  }
  const c10::Stream stream = current_stream(device.index());
  const StreamHandle handle = native_stream(stream);
  DeviceRuntime& runtime = active_runtime();
  // A pinned block's use is recorded first: if the copy then fails to
  // enqueue, the block is only kept from reuse a little longer.
  if (kind == CopyKind::DeviceToDevice ||
      (pinned_async && record_host_use(host, stream))) {
    TORCH_BACKEND_CHECK(runtime.memcpy_async(dst, src, bytes, kind, handle));
    if (C10_UNLIKELY(launch_blocking())) {
      wait_after_launch("copy_", device);
    }
    return;
  }
  // After the stream's earlier work (a failure here leaves nothing queued),
  // then the runtime's synchronous copy.
  synchronize_stream(stream);  // raises for a failed collective's output
  TORCH_BACKEND_CHECK(runtime.memcpy(dst, src, bytes, kind));
}

const Tensor& resize_(const Tensor& self, IntArrayRef size,
                      std::optional<at::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  if (self.sizes() == size && !memory_format.has_value()) {
    return self;
  }
  impl->set_sizes_contiguous(size);
  if (memory_format.has_value()) {
    TORCH_CHECK(*memory_format != at::MemoryFormat::Preserve,
                "Unsupported memory format Preserve");
    impl->empty_tensor_restride(*memory_format);
  }
  const size_t needed = at::detail::computeStorageNbytes(
      self.sizes(), self.strides(), self.dtype().itemsize(),
      self.storage_offset());
  if (needed > self.storage().nbytes()) {
    resize_storage_bytes(self.storage(), needed);
  }
  return self;
}

Tensor& set_storage(Tensor& self, c10::Storage source, int64_t storage_offset,
                    IntArrayRef size, IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == DeviceType::PrivateUse1,
              "set_: expected a storage on ", self.device(), " but got one on ",
              source.device());
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_storage_keep_dtype(std::move(source));
  impl->set_storage_offset(storage_offset);
  if (stride.empty()) {
    impl->set_sizes_contiguous(size);
  } else {
    impl->set_sizes_and_strides(size, stride);
  }
  const size_t needed = at::detail::computeStorageNbytes(
      self.sizes(), self.strides(), self.dtype().itemsize(), storage_offset);
  if (needed > self.storage().nbytes()) {
    resize_storage_bytes(self.storage(), needed);
  }
  return self;
}

Tensor& set_source_storage(Tensor& self, c10::Storage source) {
  const int64_t numel =
      static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage(self, std::move(source), 0, {numel}, {});
}

Tensor& set_source_tensor(Tensor& self, const Tensor& source) {
  if (self.unsafeGetTensorImpl() == source.unsafeGetTensorImpl()) {
    return self;
  }
  return set_storage(self, source.storage(), source.storage_offset(),
                     source.sizes(), source.strides());
}

// Byte span a strided tensor touches, from its first element.
size_t span_bytes(const Tensor& t) {
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    last += (t.size(d) - 1) * t.stride(d);
  }
  return static_cast<size_t>(last + 1) * t.dtype().itemsize();
}

// A CPU tensor with `t`'s sizes and strides over a host copy of its span.
Tensor host_view(const Tensor& t, bool download) {
  const size_t bytes = span_bytes(t);
  Tensor buffer = at::empty({static_cast<int64_t>(bytes)},
                            at::TensorOptions().dtype(at::kByte));
  if (download) {
    copy_bytes(buffer.data_ptr(), t.data_ptr(), bytes, CopyKind::DeviceToHost,
               t.device(), false);
  }
  Tensor typed = buffer.view(t.scalar_type());
  Tensor view = typed.as_strided(t.sizes(), t.strides(), 0);
  if (t.is_conj()) {
    view = view.conj();
  }
  if (t.is_neg()) {
    view = view._neg_view();
  }
  return view;
}

bool is_plain_dense(const Tensor& t) {
  return t.is_contiguous() && !t.is_conj() && !t.is_neg();
}

CopyKind copy_kind(const Tensor& src, const Tensor& dst) {
  if (src.is_cpu()) {
    return CopyKind::HostToDevice;
  }
  return dst.is_cpu() ? CopyKind::DeviceToHost : CopyKind::DeviceToDevice;
}

Tensor copy_from(const Tensor& src, const Tensor& dst, bool non_blocking);

// With the backend's copy kernel, the strided, broadcasting and casting part
// of a copy runs on the device: directly between two tensors of one device,
// and into a dense device staging tensor on the device side of a transfer
// (so only dense bytes cross, and a strided destination need not be
// downloaded first). False: the host path below does it.
bool copy_on_device_first(const Tensor& src, const Tensor& dst,
                          bool non_blocking) {
  if (!has_copy_kernel()) {
    return false;
  }
  if (!src.is_cpu() && !dst.is_cpu()) {
    return src.device() == dst.device() && copy_on_device(dst, src);
  }
  if (dst.is_cpu()) {  // download a strided source: densify it first
    if (is_plain_dense(src)) {
      return false;
    }
    Tensor dense = at::empty(src.sizes(), src.options());
    if (!copy_on_device(dense, src)) {
      return false;
    }
    copy_from(dense, dst, non_blocking);
    return true;
  }
  // Upload into a strided or broadcast destination: dense bytes of its
  // dtype go up, the device restrides them (nothing is downloaded).
  if (is_plain_dense(dst) && src.sizes() == dst.sizes()) {
    return false;
  }
  Tensor staged = at::empty(src.sizes(), dst.options());
  copy_from(src, staged, false);
  return copy_on_device(dst, staged);
}

Tensor copy_from(const Tensor& src, const Tensor& dst, bool non_blocking) {
  for (const Tensor* t : {&src, &dst}) {
    TORCH_CHECK(t->is_cpu() || t->device().type() == DeviceType::PrivateUse1,
                "copy between ", src.device(), " and ", dst.device(),
                " is not supported");
  }
  TORCH_CHECK(!dst.is_conj() && !dst.is_neg(),
              "copy_: destination with conjugate/negative bit is not "
              "supported on this device");
  inherit_tensor_metadata(src, dst);  // clone(), .to("<device>:1")
  if (dst.numel() == 0) {
    return dst;
  }
  const Device device = dst.is_cpu() ? src.device() : dst.device();
  if (!src.is_cpu() && !dst.is_cpu() && src.device() != dst.device()) {
    // Across devices: the source's pending writes come first.
    c10::DeviceGuard guard(src.device());
    synchronize_stream(current_stream(src.device().index()));
  }
  if (src.dtype() == dst.dtype() && src.sizes() == dst.sizes() &&
      is_plain_dense(src) && is_plain_dense(dst)) {
    copy_bytes(dst.data_ptr(), src.data_ptr(), dst.nbytes(),
               copy_kind(src, dst), device, non_blocking);
    return dst;
  }
  if (copy_on_device_first(src, dst, non_blocking)) {
    return dst;
  }
  // General case: let the CPU convert dtypes, broadcast and restride.
  const Tensor src_host = src.is_cpu() ? src : host_view(src, true);
  if (dst.is_cpu()) {
    dst.copy_(src_host);
    return dst;
  }
  // A dense destination is overwritten whole, so it need not be downloaded.
  Tensor dst_host = host_view(dst, !dst.is_non_overlapping_and_dense());
  dst_host.copy_(src_host);
  copy_bytes(dst.data_ptr(), dst_host.data_ptr(), span_bytes(dst),
             CopyKind::HostToDevice, device, false);
  return dst;
}

Tensor copy_from_and_resize(const Tensor& src, const Tensor& dst) {
  dst.resize_(src.sizes());
  return copy_from(src, dst, false);
}

void record_tensor_stream(Tensor& self, c10::Stream stream) {
  record_stream(self.storage().data_ptr(), stream);
}

c10::Scalar local_scalar_dense(const Tensor& self) {
  refuse_while_capturing(current_stream(self.device().index()),
                         "aten::_local_scalar_dense (Tensor.item()) reads a "
                         "device value on the host",
                         kHostSyncAdvice);
  return at::_local_scalar_dense(self.cpu());
}

// Views: PyTorch's own kernels (nearly every view op is composed of these),
// plus the base's backend metadata.
Tensor as_strided(const Tensor& self, at::IntArrayRef size,
                  at::IntArrayRef stride, std::optional<int64_t> offset) {
  Tensor view = at::native::as_strided_tensorimpl(self, size, stride, offset);
  inherit_tensor_metadata(self, view);
  return view;
}

Tensor view(const Tensor& self, at::IntArrayRef size) {
  Tensor view = at::native::view(self, size);
  inherit_tensor_metadata(self, view);
  return view;
}

Tensor reshape_alias(const Tensor& self, at::IntArrayRef size,
                     at::IntArrayRef stride) {
  Tensor view = at::native::_reshape_alias(self, size, stride);
  inherit_tensor_metadata(self, view);
  return view;
}

Tensor alias(const Tensor& self) {
  Tensor view = at::native::alias(self);
  inherit_tensor_metadata(self, view);
  return view;
}

// A tensor made "like" self: copy.deepcopy makes one and set_()s it to the
// copied storage, which would otherwise lose the metadata.
Tensor new_empty(const Tensor& self, c10::SymIntArrayRef size,
                 std::optional<at::ScalarType> dtype,
                 std::optional<at::Layout> layout, std::optional<Device> device,
                 std::optional<bool> pin_memory) {
  Tensor made = at::native::new_empty_symint(self, size, dtype, layout, device,
                                             pin_memory);
  inherit_tensor_metadata(self, made);
  return made;
}

}  // namespace

void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes) {
  TORCH_CHECK(storage.resizable(),
              "Trying to resize storage that is not resizable");
  const size_t old_bytes = storage.nbytes();
  c10::DeviceGuard guard(storage.device());
  c10::DataPtr fresh = storage.allocator()->allocate(new_bytes);
  const size_t keep = std::min(old_bytes, new_bytes);
  if (keep > 0 && storage.data() != nullptr) {
    copy_bytes(fresh.get(), storage.data(), keep, CopyKind::DeviceToDevice,
               storage.device(), false);
  }
  storage.set_data_ptr_noswap(std::move(fresh));
  storage.set_nbytes(new_bytes);
}

void register_minimal_kernels() {
  // Leaked on purpose: deregistering kernels during interpreter shutdown
  // races with PyTorch's own static destructors.
  auto* lib =
      new torch::Library(torch::Library::IMPL, "aten",
                         c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  lib->impl("empty.memory_format", TORCH_FN(empty_memory_format));
  lib->impl("empty_strided", TORCH_FN(empty_strided));
  lib->impl("as_strided", TORCH_FN(as_strided));
  lib->impl("view", TORCH_FN(view));
  lib->impl("_reshape_alias", TORCH_FN(reshape_alias));
  lib->impl("alias", TORCH_FN(alias));
  lib->impl("new_empty", TORCH_FN(new_empty));
  lib->impl("resize_", TORCH_FN(resize_));
  lib->impl("set_.source_Storage", TORCH_FN(set_source_storage));
  lib->impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
  lib->impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
  lib->impl("_copy_from", TORCH_FN(copy_from));
  lib->impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  lib->impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  lib->impl("record_stream", TORCH_FN(record_tensor_stream));
  // copy_from resolves conjugate/negative bits itself (like copy_, which
  // PyTorch exempts the same way); through the math-bit fallbacks it would
  // recurse: they materialise with clone(), which copies via _copy_from.
  for (const auto key :
       {c10::DispatchKey::Conjugate, c10::DispatchKey::Negative}) {
    auto* bits = new torch::Library(torch::Library::IMPL, "aten", key, __FILE__,
                                    __LINE__);
    bits->impl("_copy_from", torch::CppFunction::makeFallthrough());
    bits->impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
  }
}

}  // namespace torch_backend
