// Our declaration of CANN's aclnnop/aclnn_add.h (the call torch-backend-npu
// makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_ADD_H_
#define TORCH_BACKEND_NPU_ACLNN_ADD_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnAdd, const aclTensor* self,
                                const aclTensor* other, const aclScalar* alpha,
                                aclTensor* out)

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnAdds, const aclTensor* self,
                                const aclScalar* other, const aclScalar* alpha,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_ADD_H_
