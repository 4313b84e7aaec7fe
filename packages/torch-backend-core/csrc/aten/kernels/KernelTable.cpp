#include "KernelTable.h"

#include <algorithm>
#include <unordered_map>

#include <c10/util/Exception.h>

#include <torch_backend/Runtime.h>

#include "OpTable.h"

namespace torch_backend {

KernelRegistry::~KernelRegistry() = default;

namespace {

template <class Kernel>
using ByName = std::unordered_map<std::string, Kernel>;

class Table final : public KernelRegistry {
 public:
  void elementwise(const char* name, ElementwiseKernel kernel) override {
    add("elementwise", name, kernel, elementwise_);
  }
  void reduction(const char* name, ReductionKernel kernel) override {
    add("reduction", name, kernel, reduction_);
  }
  void gemm(GemmKernel kernel) override { set("gemm", kernel, gemm_); }
  void softmax(const char* name, SoftmaxKernel forward,
               SoftmaxBackwardKernel backward) override {
    TORCH_CHECK(backward != nullptr, "softmax kernel '", name,
                "' has no backward");
    add("softmax", name, forward, softmax_);
    softmax_backward_[name] = backward;
  }
  void nll_loss(NllLossKernel forward,
                NllLossBackwardKernel backward) override {
    set_pair("nll_loss", forward, backward, nll_loss_, nll_loss_backward_);
  }

  void indexing(const char* name, IndexKernel kernel) override {
    add("indexing", name, kernel, indexing_);
  }

  void layer_norm(LayerNormKernel forward,
                  LayerNormBackwardKernel backward) override {
    set_pair("layer_norm", forward, backward, layer_norm_,
             layer_norm_backward_);
  }

  void dropout(DropoutKernel kernel) override {
    set("dropout", kernel, dropout_);
  }

  void arg_reduction(const char* name, ArgReductionKernel kernel) override {
    add("arg_reduction", name, kernel, arg_reduction_);
  }

  void batch_norm(BatchNormKernel forward,
                  BatchNormBackwardKernel backward) override {
    set_pair("batch_norm", forward, backward, batch_norm_,
             batch_norm_backward_);
  }

  void variance(VarianceKernel kernel) override {
    set("variance", kernel, variance_);
  }

  void attention(AttentionKernel forward,
                 AttentionBackwardKernel backward) override {
    set_pair("attention", forward, backward, attention_, attention_backward_);
  }

  void multi_tensor(const char* name, MultiTensorKernel kernel) override {
    add("multi_tensor", name, kernel, multi_tensor_);
  }
  void convolution(ConvolutionKernel forward,
                   ConvolutionBackwardKernel backward) override {
    set_pair("convolution", forward, backward, convolution_,
             convolution_backward_);
  }
  void pooling(const char* name, PoolKernel forward,
               PoolBackwardKernel backward) override {
    TORCH_CHECK(backward != nullptr, "pooling kernel '", name,
                "' has no backward");
    add("pooling", name, forward, pool_);
    pool_backward_[name] = backward;
  }

  ByName<ElementwiseKernel> elementwise_;
  ConvolutionKernel convolution_ = nullptr;
  ConvolutionBackwardKernel convolution_backward_ = nullptr;
  ByName<PoolKernel> pool_;
  ByName<PoolBackwardKernel> pool_backward_;
  ByName<MultiTensorKernel> multi_tensor_;
  AttentionKernel attention_ = nullptr;
  AttentionBackwardKernel attention_backward_ = nullptr;
  VarianceKernel variance_ = nullptr;
  BatchNormKernel batch_norm_ = nullptr;
  BatchNormBackwardKernel batch_norm_backward_ = nullptr;
  ByName<ArgReductionKernel> arg_reduction_;
  DropoutKernel dropout_ = nullptr;
  LayerNormKernel layer_norm_ = nullptr;
  LayerNormBackwardKernel layer_norm_backward_ = nullptr;
  ByName<IndexKernel> indexing_;
  ByName<ReductionKernel> reduction_;
  GemmKernel gemm_ = nullptr;
  ByName<SoftmaxKernel> softmax_;
  ByName<SoftmaxBackwardKernel> softmax_backward_;
  NllLossKernel nll_loss_ = nullptr;
  NllLossBackwardKernel nll_loss_backward_ = nullptr;

 private:
  // The single kernels of a family: a null one is refused.
  template <class Kernel>
  static void set(const char* family, Kernel kernel, Kernel& into) {
    TORCH_CHECK(kernel != nullptr, "the ", family, " kernel is null");
    into = kernel;
  }

  // A forward kernel and its backward, registered together.
  template <class Forward, class Backward>
  static void set_pair(const char* family, Forward forward, Backward backward,
                       Forward& forward_into, Backward& backward_into) {
    TORCH_CHECK(forward != nullptr && backward != nullptr, "the ", family,
                " kernels are null");
    forward_into = forward;
    backward_into = backward;
  }

  // A misspelt name would silently leave its op on the fallback: refuse it.
  template <class Kernel>
  static void add(const std::string& family, const char* name, Kernel kernel,
                  ByName<Kernel>& into) {
    TORCH_CHECK(kernel != nullptr, family, " kernel '", name, "' is null");
    const auto known = known_kernels(family);
    TORCH_CHECK(std::find(known.begin(), known.end(), name) != known.end(),
                "the device library registers an unknown ", family, " kernel '",
                name,
                "'; `python -m torch_backend ops` lists "
                "the kernels core can use");
    into[name] = kernel;
  }
};

Table& table() {
  static auto* instance = new Table();  // leaked: kernels run until exit
  return *instance;
}

template <class Kernel>
Kernel lookup(const ByName<Kernel>& kernels, const std::string& name) {
  auto it = kernels.find(name);
  return it == kernels.end() ? nullptr : it->second;
}

}  // namespace

void load_device_kernels(DeviceRuntime* runtime) {
  using Define = void (*)(KernelRegistry&);
  using Abi = int (*)();
  auto define = reinterpret_cast<Define>(
      device_library_symbol(runtime, TORCH_BACKEND_DEVICE_KERNELS_SYMBOL));
  if (define == nullptr) {
    return;
  }
  auto abi = reinterpret_cast<Abi>(
      device_library_symbol(runtime, "torch_backend_device_kernels_abi"));
  const int version = abi != nullptr ? abi() : -1;
  TORCH_CHECK(version == kDeviceKernelsAbiVersion,
              "the device library's kernels were built for device-kernel ABI ",
              version, " but this torch-backend-core expects ",
              kDeviceKernelsAbiVersion, "; rebuild the backend package");
  define(table());
}

ElementwiseKernel elementwise_kernel(const std::string& name) {
  return lookup(table().elementwise_, name);
}
MultiTensorKernel multi_tensor_kernel(const std::string& name) {
  return lookup(table().multi_tensor_, name);
}
ReductionKernel reduction_kernel(const std::string& name) {
  return lookup(table().reduction_, name);
}
GemmKernel gemm_kernel() { return table().gemm_; }
ConvolutionKernel convolution_kernel() { return table().convolution_; }
ConvolutionBackwardKernel convolution_backward_kernel() {
  return table().convolution_backward_;
}
PoolKernel pool_kernel(const std::string& name) {
  return lookup(table().pool_, name);
}
PoolBackwardKernel pool_backward_kernel(const std::string& name) {
  return lookup(table().pool_backward_, name);
}
SoftmaxKernel softmax_kernel(const std::string& name) {
  return lookup(table().softmax_, name);
}
SoftmaxBackwardKernel softmax_backward_kernel(const std::string& name) {
  return lookup(table().softmax_backward_, name);
}
NllLossKernel nll_loss_kernel() { return table().nll_loss_; }
AttentionKernel attention_kernel() { return table().attention_; }
AttentionBackwardKernel attention_backward_kernel() {
  return table().attention_backward_;
}
LayerNormKernel layer_norm_kernel() { return table().layer_norm_; }
DropoutKernel dropout_kernel() { return table().dropout_; }
BatchNormKernel batch_norm_kernel() { return table().batch_norm_; }
BatchNormBackwardKernel batch_norm_backward_kernel() {
  return table().batch_norm_backward_;
}
LayerNormBackwardKernel layer_norm_backward_kernel() {
  return table().layer_norm_backward_;
}
ArgReductionKernel arg_reduction_kernel(const std::string& name) {
  return lookup(table().arg_reduction_, name);
}
IndexKernel index_kernel(const std::string& name) {
  return lookup(table().indexing_, name);
}
VarianceKernel variance_kernel() { return table().variance_; }

NllLossBackwardKernel nll_loss_backward_kernel() {
  return table().nll_loss_backward_;
}

}  // namespace torch_backend
