// AMP for any backend: PyTorch's own autocast op lists (the ones CUDA uses,
// its banned op included)
// registered for AutocastPrivateUse1, plus a fallthrough for every other op
// (PyTorch registers none for PrivateUse1, so without it ops under
// torch.autocast(<device>) fail with "Could not run ... AutocastPrivateUse1").
#include <ATen/Operators.h>
#include <ATen/autocast_mode.h>
#include <torch/library.h>

#include "Registration.h"
#include "TorchCompat.h"

namespace torch_backend {
namespace {

// CUDA's banned list: binary_cross_entropy is not safe in float16 (log of a
// probability rounded to 0 or 1), so autocast refuses it with the text CUDA
// gives, rather than computing an inaccurate loss.
at::Tensor binary_cross_entropy_banned(const at::Tensor&, const at::Tensor&,
                                       const std::optional<at::Tensor>&,
                                       int64_t) {
  TORCH_CHECK(
      false,
      "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are "
      "unsafe to autocast.\n"
      "Many models use a sigmoid layer right before the binary cross entropy "
      "layer.\n"
      "In this case, combine the two layers using "
      "torch.nn.functional.binary_cross_entropy_with_logits\n"
      "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and "
      "BCEWithLogits are\n"
      "safe to autocast.");
}

}  // namespace

void register_autocast() {
  // Leaked on purpose, like the kernel library.
  auto* others = new torch::Library(torch::Library::IMPL, "_",
                                    c10::DispatchKey::AutocastPrivateUse1,
                                    __FILE__, __LINE__);
  others->fallback(torch::CppFunction::makeFallthrough());

  auto* lib = new torch::Library(torch::Library::IMPL, "aten",
                                 c10::DispatchKey::AutocastPrivateUse1,
                                 __FILE__, __LINE__);
  torch::Library& m = *lib;  // the KERNEL macros register into `m`
  // Every name the op lists use unqualified.
  using namespace compat::autocast_list_names;
  using at::Tensor;
  using c10::IntArrayRef;
  using c10::Scalar;
  using c10::ScalarType;
#define TB_LOWER_PRECISION(...) \
  KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define TB_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define TB_FP32_SET_OPT_DTYPE(...) \
  KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define TB_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
#define TB_DIFFERENT_SIGNATURE(...) \
  KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE(__VA_ARGS__)
  AT_FORALL_LOWER_PRECISION_FP(TB_LOWER_PRECISION)
  AT_FORALL_FP32(TB_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(TB_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(TB_DIFFERENT_SIGNATURE)
  AT_FORALL_PROMOTE(TB_PROMOTE)
#undef TB_LOWER_PRECISION
#undef TB_FP32
#undef TB_FP32_SET_OPT_DTYPE
#undef TB_PROMOTE
#undef TB_DIFFERENT_SIGNATURE
  m.impl("binary_cross_entropy", TORCH_FN(binary_cross_entropy_banned));
}

}  // namespace torch_backend
