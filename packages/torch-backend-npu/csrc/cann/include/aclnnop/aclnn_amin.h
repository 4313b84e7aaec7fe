// Our declaration of CANN's aclnnop/aclnn_amin.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_AMIN_H_
#define TORCH_BACKEND_NPU_ACLNN_AMIN_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnAmin, const aclTensor* self,
                                const aclIntArray* dim, bool keepDim,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_AMIN_H_
