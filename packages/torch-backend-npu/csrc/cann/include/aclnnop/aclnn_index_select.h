// Our declaration of CANN's aclnnop/aclnn_index_select.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_INDEX_SELECT_H_
#define TORCH_BACKEND_NPU_ACLNN_INDEX_SELECT_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnIndexSelect, const aclTensor* self,
                                int64_t dim, const aclTensor* index,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_INDEX_SELECT_H_
