// Our declaration of CANN's aclnnop/aclnn_avg_pool2d.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_AVG_POOL2D_H_
#define TORCH_BACKEND_NPU_ACLNN_AVG_POOL2D_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnAvgPool2d, const aclTensor* self,
                                const aclIntArray* kernelSize,
                                const aclIntArray* strides,
                                const aclIntArray* paddings, bool ceilMode,
                                bool countIncludePad, int64_t divisorOverride,
                                int8_t cubeMathType, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_AVG_POOL2D_H_
