// Our declaration of CANN's aclnnop/aclnn_baddbmm.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_BADDBMM_H_
#define TORCH_BACKEND_NPU_ACLNN_BADDBMM_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnBaddbmm, const aclTensor* self,
                                const aclTensor* batch1,
                                const aclTensor* batch2, const aclScalar* beta,
                                const aclScalar* alpha, aclTensor* out,
                                int8_t cubeMathType)

#endif  // TORCH_BACKEND_NPU_ACLNN_BADDBMM_H_
