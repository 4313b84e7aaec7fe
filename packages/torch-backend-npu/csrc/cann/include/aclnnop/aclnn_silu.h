// Our declaration of CANN's aclnnop/aclnn_silu.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_SILU_H_
#define TORCH_BACKEND_NPU_ACLNN_SILU_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnSilu, const aclTensor* self,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_SILU_H_
