#include "HostThreads.h"

#include <dlfcn.h>

namespace torch_backend {
namespace {

// ATen's own grain: below it at::parallel_for stays serial; MKL and oneDNN
// do not follow it, hence this guard.
constexpr int64_t kSmallElements = 32768;

// OpenMP's per-thread team size, from the OpenMP runtime torch loaded (none:
// a torch built without OpenMP; then nothing changes).
struct OpenMp {
  int (*get_max_threads)() = nullptr;
  void (*set_num_threads)(int) = nullptr;

  OpenMp() {
    get_max_threads =
        reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    set_num_threads = reinterpret_cast<void (*)(int)>(
        dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  }

  bool available() const {
    return get_max_threads != nullptr && set_num_threads != nullptr;
  }
};

const OpenMp& open_mp() {
  static const OpenMp instance;
  return instance;
}

int64_t elements_on(const torch::jit::Stack& stack, size_t num_args) {
  int64_t total = 0;
  for (size_t i = stack.size() - num_args; i < stack.size(); ++i) {
    const c10::IValue& value = stack[i];
    if (value.isTensor()) {
      total += value.toTensor().numel();
    } else if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorList().vec()) {
        total += t.numel();
      }
    }
  }
  return total;
}

}  // namespace

SerialForSmallWork::SerialForSmallWork(const torch::jit::Stack& stack,
                                       size_t num_args) {
  const OpenMp& omp = open_mp();
  if (!omp.available() || elements_on(stack, num_args) > kSmallElements) {
    return;
  }
  const int threads = omp.get_max_threads();
  if (threads > 1) {
    omp.set_num_threads(1);  // this thread's teams only (a per-thread setting)
    previous_threads_ = threads;
  }
}

SerialForSmallWork::~SerialForSmallWork() {
  if (previous_threads_ > 0) {
    open_mp().set_num_threads(previous_threads_);
  }
}

}  // namespace torch_backend
