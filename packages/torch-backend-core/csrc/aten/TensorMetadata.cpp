// A backend's per-tensor metadata (TensorMetadata.h), kept in PyTorch's own
// slot for it (c10::BackendMeta on the TensorImpl, which shallow copies
// clone). Serialisation is the Python layer's (python/Serialization.cpp).
#include <torch_backend/TensorMetadata.h>

#include <c10/core/TensorImpl.h>

#include <string>
#include <utility>

#include "Registration.h"

namespace torch_backend {
namespace {

class Metadata final : public c10::BackendMeta {
 public:
  c10::intrusive_ptr<c10::BackendMeta> clone(
      const c10::intrusive_ptr<c10::BackendMeta>& /*self*/) const override {
    auto copy = c10::make_intrusive<Metadata>();
    copy->values = values;
    return copy;
  }

  std::map<std::string, std::int64_t> values;
};

const Metadata* metadata_of(const at::Tensor& tensor) {
  return dynamic_cast<const Metadata*>(
      tensor.unsafeGetTensorImpl()->get_backend_meta());
}

}  // namespace

void set_tensor_metadata(const at::Tensor& tensor, const std::string& name,
                         std::int64_t value) {
  TORCH_CHECK(tensor.device().type() == c10::DeviceType::PrivateUse1,
              "backend metadata is kept on device tensors only, not on ",
              tensor.device(), " tensors");
  TORCH_CHECK(!name.empty() && name != "conj" && name != "neg" &&
                  name.find('=') == std::string::npos,
              "invalid backend metadata name '", name,
              "' (empty, containing '=', or one of PyTorch's own: conj, neg)");
  c10::TensorImpl* impl = tensor.unsafeGetTensorImpl();
  auto* existing = dynamic_cast<Metadata*>(impl->get_backend_meta());
  if (existing == nullptr) {
    auto fresh = c10::make_intrusive<Metadata>();
    existing = fresh.get();
    impl->set_backend_meta(std::move(fresh));
  }
  existing->values[name] = value;
}

std::optional<std::int64_t> tensor_metadata(const at::Tensor& tensor,
                                            const std::string& name) {
  if (const Metadata* metadata = metadata_of(tensor)) {
    const auto found = metadata->values.find(name);
    if (found != metadata->values.end()) {
      return found->second;
    }
  }
  return std::nullopt;
}

std::map<std::string, std::int64_t> all_tensor_metadata(
    const at::Tensor& tensor) {
  const Metadata* metadata = metadata_of(tensor);
  return metadata != nullptr ? metadata->values
                             : std::map<std::string, std::int64_t>{};
}

void inherit_tensor_metadata(const at::Tensor& from, const at::Tensor& to) {
  const Metadata* source = metadata_of(from);
  if (source == nullptr || source->values.empty() || !to.defined() ||
      to.device().type() != c10::DeviceType::PrivateUse1 ||
      metadata_of(to) != nullptr) {
    return;
  }
  to.unsafeGetTensorImpl()->set_backend_meta(source->clone({}));
}

}  // namespace torch_backend
