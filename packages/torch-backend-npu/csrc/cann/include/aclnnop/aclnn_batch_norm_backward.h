// Our declaration of CANN's aclnnop/aclnn_batch_norm_backward.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_BATCH_NORM_BACKWARD_H_
#define TORCH_BACKEND_NPU_ACLNN_BATCH_NORM_BACKWARD_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(
    aclnnBatchNormBackward, const aclTensor* gradOut, const aclTensor* input,
    const aclTensor* weight, const aclTensor* runningMean,
    const aclTensor* runningVar, const aclTensor* saveMean,
    const aclTensor* saveInvstd, bool training, double eps,
    const aclBoolArray* outputMask, aclTensor* gradInput, aclTensor* gradWeight,
    aclTensor* gradBias)

#endif  // TORCH_BACKEND_NPU_ACLNN_BATCH_NORM_BACKWARD_H_
