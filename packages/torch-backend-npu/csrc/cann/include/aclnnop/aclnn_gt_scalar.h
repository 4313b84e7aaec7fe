// Our declaration of CANN's aclnnop/aclnn_gt_scalar.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_GT_SCALAR_H_
#define TORCH_BACKEND_NPU_ACLNN_GT_SCALAR_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnGtScalar, const aclTensor* self,
                                const aclScalar* other, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_GT_SCALAR_H_
