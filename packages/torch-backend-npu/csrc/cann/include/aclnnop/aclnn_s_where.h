// Our declaration of CANN's aclnnop/aclnn_s_where.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_S_WHERE_H_
#define TORCH_BACKEND_NPU_ACLNN_S_WHERE_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnSWhere, const aclTensor* condition,
                                const aclTensor* self, const aclTensor* other,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_S_WHERE_H_
