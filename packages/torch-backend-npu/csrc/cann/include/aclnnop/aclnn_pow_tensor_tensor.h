// Our declaration of CANN's aclnnop/aclnn_pow_tensor_tensor.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_POW_TENSOR_TENSOR_H_
#define TORCH_BACKEND_NPU_ACLNN_POW_TENSOR_TENSOR_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnPowTensorTensor, const aclTensor* self,
                                const aclTensor* exponent, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_POW_TENSOR_TENSOR_H_
