// Our declaration of CANN's aclnnop/aclnn_avg_pool2d_backward.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_AVG_POOL2D_BACKWARD_H_
#define TORCH_BACKEND_NPU_ACLNN_AVG_POOL2D_BACKWARD_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(
    aclnnAvgPool2dBackward, const aclTensor* gradOutput, const aclTensor* self,
    const aclIntArray* kernelSize, const aclIntArray* stride,
    const aclIntArray* padding, bool ceilMode, bool countIncludePad,
    int64_t divisorOverride, int8_t cubeMathType, aclTensor* gradInput)

#endif  // TORCH_BACKEND_NPU_ACLNN_AVG_POOL2D_BACKWARD_H_
