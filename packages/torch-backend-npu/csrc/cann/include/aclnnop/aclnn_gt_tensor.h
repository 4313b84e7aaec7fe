// Our declaration of CANN's aclnnop/aclnn_gt_tensor.h (the call
// torch-backend-npu makes).
#ifndef TORCH_BACKEND_NPU_ACLNN_GT_TENSOR_H_
#define TORCH_BACKEND_NPU_ACLNN_GT_TENSOR_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnGtTensor, const aclTensor* self,
                                const aclTensor* other, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_GT_TENSOR_H_
