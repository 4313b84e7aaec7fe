// Our declaration of CANN's aclnnop/aclnn_scatter_add.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_SCATTER_ADD_H_
#define TORCH_BACKEND_NPU_ACLNN_SCATTER_ADD_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnScatterAdd, const aclTensor* self,
                                int64_t dim, const aclTensor* index,
                                const aclTensor* src, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_SCATTER_ADD_H_
