// The portable kernels compiled by the host compiler, for tests on machines
// without a GPU: every "launch" runs its function in a loop on the calling
// thread (kernels/Portable.cuh). A test links this file into a backend whose
// device memory is host memory (the one `python -m torch_backend new` writes)
// and runs core's checks through it; cuBLAS and the launches themselves are
// left to the GPU machines.
#include "Registration.cuh"

TORCH_BACKEND_DEFINE_DEVICE_KERNELS(kernels) {
  gpu::register_portable_kernels(kernels);
}
