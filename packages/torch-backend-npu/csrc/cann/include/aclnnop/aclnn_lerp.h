// Our declaration of CANN's aclnnop/aclnn_lerp.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_LERP_H_
#define TORCH_BACKEND_NPU_ACLNN_LERP_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnLerp, const aclTensor* self,
                                const aclTensor* end, const aclTensor* weight,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_LERP_H_
