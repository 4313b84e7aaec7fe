// Our declaration of CANN's aclnnop/aclnn_batch_norm.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_BATCH_NORM_H_
#define TORCH_BACKEND_NPU_ACLNN_BATCH_NORM_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnBatchNorm, const aclTensor* input,
                                const aclTensor* weight, const aclTensor* bias,
                                aclTensor* runningMean, aclTensor* runningVar,
                                bool training, double momentum, double eps,
                                aclTensor* output, aclTensor* saveMean,
                                aclTensor* saveInvstd)

#endif  // TORCH_BACKEND_NPU_ACLNN_BATCH_NORM_H_
