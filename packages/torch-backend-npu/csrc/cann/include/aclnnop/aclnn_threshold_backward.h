// Our declaration of CANN's aclnnop/aclnn_threshold_backward.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_THRESHOLD_BACKWARD_H_
#define TORCH_BACKEND_NPU_ACLNN_THRESHOLD_BACKWARD_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnThresholdBackward,
                                const aclTensor* gradOutput,
                                const aclTensor* self,
                                const aclScalar* threshold, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_THRESHOLD_BACKWARD_H_
