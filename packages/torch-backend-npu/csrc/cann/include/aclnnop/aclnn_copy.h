// Our declaration of CANN's aclnnop/aclnn_copy.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_COPY_H_
#define TORCH_BACKEND_NPU_ACLNN_COPY_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnInplaceCopy, aclTensor* selfRef,
                                const aclTensor* src)

#endif  // TORCH_BACKEND_NPU_ACLNN_COPY_H_
