// The differences between the torch releases core supports (2.11 to 2.15),
// in one place: every other file is written against one API and calls the
// helpers here where releases differ. Python's counterpart is
// torch_backend/_compat.py.
#pragma once

#include <ATen/TensorMeta.h>
#include <torch/headeronly/version.h>

namespace torch_backend::compat {

// Whether the torch being compiled against is older than major.minor.
#define TORCH_BACKEND_TORCH_BEFORE(major, minor) \
  (TORCH_VERSION_MAJOR < (major) ||              \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR < (minor)))

// Structured kernels' output hook, MetaBase::set_output_raw_strided, took a
// trailing `DimnameList names` before torch 2.13.
#define TORCH_BACKEND_OUTPUT_HOOK_TAKES_NAMES TORCH_BACKEND_TORCH_BEFORE(2, 13)

// A structured meta class (Meta) whose outputs are provided by
// `provide_output`, whatever the hook's signature in this torch.
template <class Meta>
struct OutputHook : Meta {
  virtual void provide_output(int64_t index, at::IntArrayRef sizes,
                              at::IntArrayRef strides,
                              at::TensorOptions options) = 0;
#if TORCH_BACKEND_OUTPUT_HOOK_TAKES_NAMES
  void set_output_raw_strided(int64_t index, at::IntArrayRef sizes,
                              at::IntArrayRef strides,
                              at::TensorOptions options,
                              at::DimnameList /*names*/) final {
    provide_output(index, sizes, strides, options);
  }
#else
  void set_output_raw_strided(int64_t index, at::IntArrayRef sizes,
                              at::IntArrayRef strides,
                              at::TensorOptions options) final {
    provide_output(index, sizes, strides, options);
  }
#endif
};

// Asks `meta` for output `index` through its (virtual) output hook.
inline void request_output(at::impl::MetaBase& meta, int64_t index,
                           at::IntArrayRef sizes, at::IntArrayRef strides,
                           at::TensorOptions options) {
#if TORCH_BACKEND_OUTPUT_HOOK_TAKES_NAMES
  meta.set_output_raw_strided(index, sizes, strides, options, {});
#else
  meta.set_output_raw_strided(index, sizes, strides, options);
#endif
}

// Calls Base's own output hook on `meta` (TensorIteratorBase records the
// output there), bypassing the override.
template <class Base>
void base_output_hook(Base& meta, int64_t index, at::IntArrayRef sizes,
                      at::IntArrayRef strides, at::TensorOptions options) {
#if TORCH_BACKEND_OUTPUT_HOOK_TAKES_NAMES
  meta.Base::set_output_raw_strided(index, sizes, strides, options, {});
#else
  meta.Base::set_output_raw_strided(index, sizes, strides, options);
#endif
}

// Gloo's all_to_all over lists of tensors arrived in torch 2.12 (2.11 has
// only all_to_all_single).
constexpr bool kGlooHasListAllToAll = !TORCH_BACKEND_TORCH_BEFORE(2, 12);

// Device-generic graphs (ATen/core/GraphImplInterface.h, REGISTER_GRAPH_IMPL,
// torch.accelerator.Graph) arrived in torch 2.12; torch.<device>.graphs is
// core's own on every release.
#define TORCH_BACKEND_HAS_GRAPH_IMPL !TORCH_BACKEND_TORCH_BEFORE(2, 12)

// Names torch's autocast op lists use unqualified, for a `using namespace`
// where the lists expand: 2.11 and 2.12 list ops over DimnameList, which went
// with named tensors in 2.13.
namespace autocast_list_names {
#if TORCH_BACKEND_TORCH_BEFORE(2, 13)
using at::DimnameList;
#endif
}  // namespace autocast_list_names

}  // namespace torch_backend::compat
