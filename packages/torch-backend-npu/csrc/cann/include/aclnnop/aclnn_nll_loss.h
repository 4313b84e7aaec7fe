// Our declaration of CANN's aclnnop/aclnn_nll_loss.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_NLL_LOSS_H_
#define TORCH_BACKEND_NPU_ACLNN_NLL_LOSS_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnNLLLoss, const aclTensor* self,
                                const aclTensor* target,
                                const aclTensor* weight, int64_t reduction,
                                int64_t ignoreIndex, aclTensor* out,
                                aclTensor* totalWeightOut)

#endif  // TORCH_BACKEND_NPU_ACLNN_NLL_LOSS_H_
