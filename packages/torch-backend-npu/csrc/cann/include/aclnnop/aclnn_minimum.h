// Our declaration of CANN's aclnnop/aclnn_minimum.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_MINIMUM_H_
#define TORCH_BACKEND_NPU_ACLNN_MINIMUM_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnMinimum, const aclTensor* self,
                                const aclTensor* other, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_MINIMUM_H_
