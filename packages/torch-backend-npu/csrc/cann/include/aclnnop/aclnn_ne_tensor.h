// Our declaration of CANN's aclnnop/aclnn_ne_tensor.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_NE_TENSOR_H_
#define TORCH_BACKEND_NPU_ACLNN_NE_TENSOR_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnNeTensor, const aclTensor* self,
                                const aclTensor* other, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_NE_TENSOR_H_
