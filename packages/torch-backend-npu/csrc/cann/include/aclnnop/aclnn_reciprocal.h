// Our declaration of CANN's aclnnop/aclnn_reciprocal.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_RECIPROCAL_H_
#define TORCH_BACKEND_NPU_ACLNN_RECIPROCAL_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnReciprocal, const aclTensor* self,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_RECIPROCAL_H_
