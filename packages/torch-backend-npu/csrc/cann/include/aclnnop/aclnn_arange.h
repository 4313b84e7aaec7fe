// Our declaration of CANN's aclnnop/aclnn_arange.h (the call torch-backend-npu
// makes): out[i] = start + i * step, for i < ceil((end - start) / step).
#ifndef TORCH_BACKEND_NPU_ACLNN_ARANGE_H_
#define TORCH_BACKEND_NPU_ACLNN_ARANGE_H_

#include "aclnn/aclnn_base.h"

TORCH_BACKEND_NPU_DECLARE_ACLNN(aclnnArange, const aclScalar* start,
                                const aclScalar* end, const aclScalar* step,
                                aclTensor* out)

#endif  // TORCH_BACKEND_NPU_ACLNN_ARANGE_H_
