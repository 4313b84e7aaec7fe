// Our declaration of CANN's aclnnop/aclnn_index_add.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_INDEX_ADD_H_
#define TORCH_BACKEND_NPU_ACLNN_INDEX_ADD_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnIndexAdd, const aclTensor* self,
                                const int64_t dim, const aclTensor* index,
                                const aclTensor* source, const aclScalar* alpha,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_INDEX_ADD_H_
