// torch.save / torch.load of a backend's tensor metadata: PyTorch's hook for
// PrivateUse1 (the string -> bool map stored beside a tensor's storage, which
// torch._utils.get_tensor_metadata / set_tensor_metadata read and write).
#include "Serialization.h"

#include <torch/csrc/jit/serialization/pickler_helper.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <unordered_map>

#include <torch_backend/TensorMetadata.h>

namespace torch_backend {
namespace {

// Entries of 0 and 1 travel as PyTorch's flags ({"name": false/true}, what
// torch._utils.set_tensor_metadata takes); other numbers as {"name=value":
// true}, since the serialised map holds only booleans.
void serialize(const at::Tensor& tensor,
               std::unordered_map<std::string, bool>& out) {
  for (const auto& [name, value] : all_tensor_metadata(tensor)) {
    if (value == 0 || value == 1) {
      out[name] = value == 1;
    } else {
      out[name + "=" + std::to_string(value)] = true;
    }
  }
}

void deserialize(const at::Tensor& tensor,
                 std::unordered_map<std::string, bool>& in) {
  for (const auto& [key, flag] : in) {
    const auto equals = key.rfind('=');
    if (equals != std::string::npos && equals + 1 < key.size()) {
      const std::string digits = key.substr(equals + 1);
      char* end = nullptr;
      errno = 0;
      const long long value = std::strtoll(digits.c_str(), &end, 10);
      if (errno == 0 && *end == '\0') {
        set_tensor_metadata(tensor, key.substr(0, equals), value);
        continue;
      }
    }
    set_tensor_metadata(tensor, key, flag ? 1 : 0);
  }
}

}  // namespace

void register_metadata_serialization() {
  torch::jit::TensorBackendMetaRegistry(c10::DeviceType::PrivateUse1,
                                        &serialize, &deserialize);
}

}  // namespace torch_backend
