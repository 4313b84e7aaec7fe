// The fake device's kernels (torch_backend/DeviceKernels.h), registered here
// family by family: computed on the host, enqueued on the stream core hands
// them, so they run in stream order on the stream's worker thread exactly as
// a real device's kernels would. Element-wise loops (FakeElementwise.cpp),
// ATen's CPU kernels as fake's "vendor library" (FakeLibraryKernels.cpp:
// GEMM, reductions, softmax, nll_loss, indexing, norms, dropout), attention,
// convolution and pooling. Off unless TORCH_BACKEND_FAKE_KERNELS=1 (the
// default keeps the zero-copy CPU fallback, which is faster on host memory).
#include <cstdlib>
#include <cstring>

#include <torch_backend/DeviceKernels.h>

// FakeElementwise.cpp
void register_fake_elementwise(torch_backend::KernelRegistry& kernels);
// FakeLibraryKernels.cpp
void register_fake_library_kernels(torch_backend::KernelRegistry& kernels);
// FakeAttention.cpp
torch_backend::Status fake_attention(const torch_backend::KernelContext& ctx,
                                     const torch_backend::AttentionCall& call);
torch_backend::Status fake_attention_backward(
    const torch_backend::KernelContext& ctx,
    const torch_backend::AttentionBackwardCall& call);
// FakeConvolution.cpp
torch_backend::Status fake_convolution(
    const torch_backend::KernelContext& ctx,
    const torch_backend::ConvolutionCall& call);
torch_backend::Status fake_convolution_backward(
    const torch_backend::KernelContext& ctx,
    const torch_backend::ConvolutionBackwardCall& call);
void register_fake_pooling(torch_backend::KernelRegistry& kernels);

namespace {

bool kernels_enabled() {
  const char* value = std::getenv("TORCH_BACKEND_FAKE_KERNELS");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

}  // namespace

bool fake_device_kernels_enabled() { return kernels_enabled(); }

TORCH_BACKEND_DEFINE_DEVICE_KERNELS(kernels) {
  if (!kernels_enabled()) {
    return;
  }
  register_fake_elementwise(kernels);
  register_fake_library_kernels(kernels);
  kernels.attention(&fake_attention, &fake_attention_backward);
  kernels.convolution(&fake_convolution, &fake_convolution_backward);
  register_fake_pooling(kernels);
}
