// Our declaration of CANN's aclnnop/aclnn_sqrt.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_SQRT_H_
#define TORCH_BACKEND_NPU_ACLNN_SQRT_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnSqrt, const aclTensor* self,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_SQRT_H_
