// Our declaration of CANN's aclnnop/aclnn_adaptive_avg_pool2d_backward.h (the
// call torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_ADAPTIVE_AVG_POOL2D_BACKWARD_H_
#define TORCH_BACKEND_NPU_ACLNN_ADAPTIVE_AVG_POOL2D_BACKWARD_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnAdaptiveAvgPool2dBackward,
                                const aclTensor* gradOutput,
                                const aclTensor* self, aclTensor* gradInput)

#endif  // TORCH_BACKEND_NPU_ACLNN_ADAPTIVE_AVG_POOL2D_BACKWARD_H_
