// Our declaration of CANN's aclnnop/aclnn_lerps.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_LERPS_H_
#define TORCH_BACKEND_NPU_ACLNN_LERPS_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnLerps, const aclTensor* self,
                                const aclTensor* end, const aclScalar* weight,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_LERPS_H_
