// Our declaration of CANN's aclnnop/aclnn_pow.h (the calls torch-backend-npu
// makes): a tensor to a scalar power, a scalar to tensor powers.
#ifndef TORCH_BACKEND_NPU_ACLNN_POW_H_
#define TORCH_BACKEND_NPU_ACLNN_POW_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnPowTensorScalar, const aclTensor* self,
                                const aclScalar* exponent, aclTensor* out)
TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnPowScalarTensor, const aclScalar* self,
                                const aclTensor* exponent, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_POW_H_
