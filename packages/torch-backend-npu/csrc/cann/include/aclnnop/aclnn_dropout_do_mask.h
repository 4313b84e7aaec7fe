// Our declaration of CANN's aclnnop/aclnn_dropout_do_mask.h (the call
// torch-backend-npu makes): out = self * bit / (1 - prob).
#ifndef TORCH_BACKEND_NPU_ACLNN_DROPOUT_DO_MASK_H_
#define TORCH_BACKEND_NPU_ACLNN_DROPOUT_DO_MASK_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnDropoutDoMask, const aclTensor* self,
                                const aclTensor* mask, double prob,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_DROPOUT_DO_MASK_H_
