// Internal: the device kernels a backend registered (DeviceKernels.h), by
// family and name. Filled once at activation, read-only afterwards.
#pragma once

#include <string>

#include <torch_backend/DeviceKernels.h>

namespace torch_backend {

// Calls the device library's TORCH_BACKEND_DEFINE_DEVICE_KERNELS function, if
// it has one; throws c10::Error on an ABI mismatch or an unknown kernel name.
void load_device_kernels(DeviceRuntime* runtime);

// Each returns nullptr when the backend has no such kernel.
ElementwiseKernel elementwise_kernel(const std::string& name);
MultiTensorKernel multi_tensor_kernel(const std::string& name);
ReductionKernel reduction_kernel(const std::string& name);
GemmKernel gemm_kernel();
SoftmaxKernel softmax_kernel(const std::string& name);
SoftmaxBackwardKernel softmax_backward_kernel(const std::string& name);
NllLossKernel nll_loss_kernel();
NllLossBackwardKernel nll_loss_backward_kernel();
IndexKernel index_kernel(const std::string& name);
ArgReductionKernel arg_reduction_kernel(const std::string& name);
LayerNormKernel layer_norm_kernel();
DropoutKernel dropout_kernel();
BatchNormKernel batch_norm_kernel();
BatchNormBackwardKernel batch_norm_backward_kernel();
LayerNormBackwardKernel layer_norm_backward_kernel();
VarianceKernel variance_kernel();
AttentionKernel attention_kernel();
AttentionBackwardKernel attention_backward_kernel();
ConvolutionKernel convolution_kernel();
ConvolutionBackwardKernel convolution_backward_kernel();
// "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d".
PoolKernel pool_kernel(const std::string& name);
PoolBackwardKernel pool_backward_kernel(const std::string& name);

}  // namespace torch_backend
