// Our declaration of CANN's aclnnop/aclnn_addcdiv.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_ADDCDIV_H_
#define TORCH_BACKEND_NPU_ACLNN_ADDCDIV_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnAddcdiv, const aclTensor* self,
                                const aclTensor* tensor1,
                                const aclTensor* tensor2,
                                const aclScalar* value, const aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_ADDCDIV_H_
