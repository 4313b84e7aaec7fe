// Our declaration of CANN's aclnnop/aclnn_layer_norm.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_LAYER_NORM_H_
#define TORCH_BACKEND_NPU_ACLNN_LAYER_NORM_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnLayerNorm, const aclTensor* input,
                                const aclIntArray* normalizedShape,
                                const aclTensor* weightOptional,
                                const aclTensor* biasOptional, double eps,
                                aclTensor* out, aclTensor* meanOutOptional,
                                aclTensor* rstdOutOptional)

#endif  // TORCH_BACKEND_NPU_ACLNN_LAYER_NORM_H_
