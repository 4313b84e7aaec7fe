// Our declaration of CANN's aclnnop/aclnn_mul.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_MUL_H_
#define TORCH_BACKEND_NPU_ACLNN_MUL_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnMul, const aclTensor* self,
                                const aclTensor* other, aclTensor* out)

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnMuls, const aclTensor* self,
                                const aclScalar* other, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_MUL_H_
