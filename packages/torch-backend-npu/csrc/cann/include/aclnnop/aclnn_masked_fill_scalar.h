// Our declaration of CANN's aclnnop/aclnn_masked_fill_scalar.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_MASKED_FILL_SCALAR_H_
#define TORCH_BACKEND_NPU_ACLNN_MASKED_FILL_SCALAR_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnInplaceMaskedFillScalar,
                                aclTensor* selfRef, const aclTensor* mask,
                                const aclScalar* value)

#endif  // TORCH_BACKEND_NPU_ACLNN_MASKED_FILL_SCALAR_H_
