// Our declaration of CANN's aclnnop/aclnn_relu.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_RELU_H_
#define TORCH_BACKEND_NPU_ACLNN_RELU_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnRelu, const aclTensor* self,
                                const aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_RELU_H_
