// Our declaration of CANN's aclnnop/aclnn_gather.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_GATHER_H_
#define TORCH_BACKEND_NPU_ACLNN_GATHER_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnGather, const aclTensor* self,
                                const int64_t dim, const aclTensor* index,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_GATHER_H_
