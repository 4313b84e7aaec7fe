// Our declaration of CANN's aclnnop/aclnn_mean.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_MEAN_H_
#define TORCH_BACKEND_NPU_ACLNN_MEAN_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnMean, const aclTensor* self,
                                const aclIntArray* dim, bool keepDim,
                                aclDataType dtype, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_MEAN_H_
