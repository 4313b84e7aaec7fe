// Our declaration of CANN's aclnnop/aclnn_reduce_sum.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_REDUCE_SUM_H_
#define TORCH_BACKEND_NPU_ACLNN_REDUCE_SUM_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnReduceSum, const aclTensor* self,
                                const aclIntArray* dims, bool keepDims,
                                aclDataType dtype, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_REDUCE_SUM_H_
