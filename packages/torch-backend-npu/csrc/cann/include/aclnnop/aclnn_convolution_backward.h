// Our declaration of CANN's aclnnop/aclnn_convolution_backward.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_CONVOLUTION_BACKWARD_H_
#define TORCH_BACKEND_NPU_ACLNN_CONVOLUTION_BACKWARD_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(
    aclnnConvolutionBackward, const aclTensor* gradOutput,
    const aclTensor* input, const aclTensor* weight,
    const aclIntArray* biasSizes, const aclIntArray* stride,
    const aclIntArray* padding, const aclIntArray* dilation, bool transposed,
    const aclIntArray* outputPadding, int groups,
    const aclBoolArray* outputMask, int8_t cubeMathType, aclTensor* gradInput,
    aclTensor* gradWeight, aclTensor* gradBias)

#endif  // TORCH_BACKEND_NPU_ACLNN_CONVOLUTION_BACKWARD_H_
