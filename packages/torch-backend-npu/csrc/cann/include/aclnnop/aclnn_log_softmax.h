// Our declaration of CANN's aclnnop/aclnn_log_softmax.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_LOG_SOFTMAX_H_
#define TORCH_BACKEND_NPU_ACLNN_LOG_SOFTMAX_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnLogSoftmax, const aclTensor* self,
                                int64_t dim, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_LOG_SOFTMAX_H_
