// Our declaration of CANN's aclnnop/aclnn_maximum.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_MAXIMUM_H_
#define TORCH_BACKEND_NPU_ACLNN_MAXIMUM_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnMaximum, const aclTensor* self,
                                const aclTensor* other, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_MAXIMUM_H_
