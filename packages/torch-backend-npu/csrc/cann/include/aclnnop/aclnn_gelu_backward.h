// Our declaration of CANN's aclnnop/aclnn_gelu_backward.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_GELU_BACKWARD_H_
#define TORCH_BACKEND_NPU_ACLNN_GELU_BACKWARD_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnGeluBackward, const aclTensor* gradOutput,
                                const aclTensor* self,
                                const aclTensor* gradInput)

#endif  // TORCH_BACKEND_NPU_ACLNN_GELU_BACKWARD_H_
