// Our declaration of CANN's aclnnop/aclnn_min_dim.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_MIN_DIM_H_
#define TORCH_BACKEND_NPU_ACLNN_MIN_DIM_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnMinDim, const aclTensor* self, int64_t dim,
                                bool keepdim, aclTensor* out,
                                aclTensor* indices)

#endif  // TORCH_BACKEND_NPU_ACLNN_MIN_DIM_H_
