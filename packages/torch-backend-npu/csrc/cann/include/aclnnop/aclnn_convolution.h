// Our declaration of CANN's aclnnop/aclnn_convolution.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_CONVOLUTION_H_
#define TORCH_BACKEND_NPU_ACLNN_CONVOLUTION_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnConvolution, const aclTensor* input,
                                const aclTensor* weight, const aclTensor* bias,
                                const aclIntArray* stride,
                                const aclIntArray* padding,
                                const aclIntArray* dilation, bool transposed,
                                const aclIntArray* outputPadding,
                                const int64_t groups, aclTensor* output,
                                int8_t cubeMathType)

#endif  // TORCH_BACKEND_NPU_ACLNN_CONVOLUTION_H_
