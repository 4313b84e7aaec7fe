// Our declarations of CANN's aclnn/acl_meta.h subset (libnnopbase): the
// descriptors aclnn operators take. See acl/acl_base.h.
#ifndef TORCH_BACKEND_NPU_ACL_META_H_
#define TORCH_BACKEND_NPU_ACL_META_H_

#include <cstdint>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;
typedef struct aclIntArray aclIntArray;
typedef struct aclBoolArray aclBoolArray;

typedef int32_t aclnnStatus;

ACL_FUNC_VISIBILITY aclTensor* aclCreateTensor(
    const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,
    const int64_t* stride, int64_t offset, aclFormat format,
    const int64_t* storageDims, uint64_t storageDimsNum, void* tensorData);
ACL_FUNC_VISIBILITY aclScalar* aclCreateScalar(void* value,
                                               aclDataType dataType);
ACL_FUNC_VISIBILITY aclIntArray* aclCreateIntArray(const int64_t* value,
                                                   uint64_t size);
ACL_FUNC_VISIBILITY aclBoolArray* aclCreateBoolArray(const bool* value,
                                                     uint64_t size);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensor(const aclTensor* tensor);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyScalar(const aclScalar* scalar);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyIntArray(const aclIntArray* array);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyBoolArray(const aclBoolArray* array);

#ifdef __cplusplus
}
#endif

#endif  // TORCH_BACKEND_NPU_ACL_META_H_
