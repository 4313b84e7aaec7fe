// Our declaration of CANN's aclnnop/aclnn_addcmul.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_ADDCMUL_H_
#define TORCH_BACKEND_NPU_ACLNN_ADDCMUL_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnAddcmul, const aclTensor* self,
                                const aclTensor* tensor1,
                                const aclTensor* tensor2,
                                const aclScalar* value, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_ADDCMUL_H_
