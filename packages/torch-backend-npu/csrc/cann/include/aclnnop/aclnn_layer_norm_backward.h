// Our declaration of CANN's aclnnop/aclnn_layer_norm_backward.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_LAYER_NORM_BACKWARD_H_
#define TORCH_BACKEND_NPU_ACLNN_LAYER_NORM_BACKWARD_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(
    aclnnLayerNormBackward, const aclTensor* gradOut, const aclTensor* input,
    const aclIntArray* normalizedShape, const aclTensor* mean,
    const aclTensor* rstd, const aclTensor* weightOptional,
    const aclTensor* biasOptional, const aclBoolArray* outputMask,
    aclTensor* gradInputOut, aclTensor* gradWeightOut, aclTensor* gradBiasOut)

#endif  // TORCH_BACKEND_NPU_ACLNN_LAYER_NORM_BACKWARD_H_
