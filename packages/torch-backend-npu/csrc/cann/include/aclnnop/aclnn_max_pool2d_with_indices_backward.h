// Our declaration of CANN's aclnnop/aclnn_max_pool2d_with_indices_backward.h
// (the call torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_MAX_POOL2D_WITH_INDICES_BACKWARD_H_
#define TORCH_BACKEND_NPU_ACLNN_MAX_POOL2D_WITH_INDICES_BACKWARD_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnMaxPool2dWithIndicesBackward,
                                const aclTensor* gradOutput,
                                const aclTensor* self, const aclTensor* indices,
                                const aclIntArray* kernelSize,
                                const aclIntArray* stride,
                                const aclIntArray* padding,
                                const aclIntArray* dilation, bool ceilMode,
                                aclTensor* gradInput)

#endif  // TORCH_BACKEND_NPU_ACLNN_MAX_POOL2D_WITH_INDICES_BACKWARD_H_
