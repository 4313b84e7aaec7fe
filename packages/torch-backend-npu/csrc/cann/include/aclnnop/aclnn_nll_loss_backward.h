// Our declaration of CANN's aclnnop/aclnn_nll_loss_backward.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_NLL_LOSS_BACKWARD_H_
#define TORCH_BACKEND_NPU_ACLNN_NLL_LOSS_BACKWARD_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnNLLLossBackward,
                                const aclTensor* gradOutput,
                                const aclTensor* self, const aclTensor* target,
                                const aclTensor* weight, int64_t reduction,
                                int64_t ignoreIndex,
                                const aclTensor* totalWeight, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_NLL_LOSS_BACKWARD_H_
