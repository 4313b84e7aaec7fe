// Our declaration of CANN's aclnnop/aclnn_sigmoid_backward.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_SIGMOID_BACKWARD_H_
#define TORCH_BACKEND_NPU_ACLNN_SIGMOID_BACKWARD_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnSigmoidBackward,
                                const aclTensor* gradOutput,
                                const aclTensor* output, aclTensor* gradInput)

#endif  // TORCH_BACKEND_NPU_ACLNN_SIGMOID_BACKWARD_H_
