// Our declaration of CANN's aclnnop/aclnn_amax.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_AMAX_H_
#define TORCH_BACKEND_NPU_ACLNN_AMAX_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnAmax, const aclTensor* self,
                                const aclIntArray* dim, bool keepDim,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_AMAX_H_
