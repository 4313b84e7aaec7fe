// Our declaration of CANN's aclnnop/aclnn_dropout_gen_mask.h (the calls
// torch-backend-npu makes). `out` is a bit mask stored as UInt8, of
// align(elements, 128) / 8 bytes; the Tensor form reads seed and offset from
// device memory when it runs (what graph capture needs).
#ifndef TORCH_BACKEND_NPU_ACLNN_DROPOUT_GEN_MASK_H_
#define TORCH_BACKEND_NPU_ACLNN_DROPOUT_GEN_MASK_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnDropoutGenMaskV2, const aclIntArray* shape,
                                double prob, int64_t seed, int64_t offset,
                                aclDataType probDataType, aclTensor* out)
TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnDropoutGenMaskV2Tensor,
                                const aclIntArray* shape, double prob,
                                const aclTensor* seedTensor,
                                const aclTensor* offsetTensor, int64_t offset,
                                aclDataType probDataType, aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_DROPOUT_GEN_MASK_H_
