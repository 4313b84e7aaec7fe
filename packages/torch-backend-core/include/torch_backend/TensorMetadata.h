// A backend's own per-tensor metadata: named integers on a device tensor (a
// private memory format number, a layout version, ...), as torch_npu keeps
// its NZ format. Core carries them to views (a view gets a copy of its
// base's when it is made), to the destination of a copy between tensors of
// the backend (unless it has metadata of its own: clone(), .to("dev:1")),
// through shallow copies (detach(), .data) and torch.save / torch.load. Python
// sees them through PyTorch's own torch._utils.get_tensor_metadata /
// set_tensor_metadata, and torch_backend.tensor_metadata / set_tensor_metadata.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <torch_backend/Export.h>

namespace torch_backend {

// Sets `name` to `value` on this tensor only (not on views made before).
TORCH_BACKEND_API void set_tensor_metadata(const at::Tensor& tensor,
                                           const std::string& name,
                                           std::int64_t value);
// The value of `name`, if set.
TORCH_BACKEND_API std::optional<std::int64_t> tensor_metadata(
    const at::Tensor& tensor, const std::string& name);
// Every entry.
TORCH_BACKEND_API std::map<std::string, std::int64_t> all_tensor_metadata(
    const at::Tensor& tensor);

}  // namespace torch_backend
