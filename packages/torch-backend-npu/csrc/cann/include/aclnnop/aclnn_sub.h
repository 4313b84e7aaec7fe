// Our declaration of CANN's aclnnop/aclnn_sub.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_SUB_H_
#define TORCH_BACKEND_NPU_ACLNN_SUB_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnSub, const aclTensor* self,
                                const aclTensor* other, const aclScalar* alpha,
                                aclTensor* out)

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnSubs, const aclTensor* self,
                                const aclScalar* other, const aclScalar* alpha,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_SUB_H_
