// Our declarations of CANN's model-run-instance capture API (acl/acl_mdl.h):
// stream capture into an aclmdlRI and its asynchronous execution, the calls
// torch_npu's NPUGraph makes. See acl_base.h.
#ifndef TORCH_BACKEND_NPU_ACL_MDL_H_
#define TORCH_BACKEND_NPU_ACL_MDL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void* aclmdlRI;

typedef enum aclmdlRICaptureMode {
  ACL_MODEL_RI_CAPTURE_MODE_GLOBAL = 0,
  ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL,
  ACL_MODEL_RI_CAPTURE_MODE_RELAXED,
} aclmdlRICaptureMode;

typedef enum aclmdlRICaptureStatus {
  ACL_MODEL_RI_CAPTURE_STATUS_NONE = 0,
  ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE,
  ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED,
} aclmdlRICaptureStatus;

ACL_FUNC_VISIBILITY aclError aclmdlRICaptureBegin(aclrtStream stream,
                                                  aclmdlRICaptureMode mode);
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureGetInfo(
    aclrtStream stream, aclmdlRICaptureStatus* status, aclmdlRI* modelRI);
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureEnd(aclrtStream stream,
                                                aclmdlRI* modelRI);
ACL_FUNC_VISIBILITY aclError aclmdlRIExecuteAsync(aclmdlRI modelRI,
                                                  aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclmdlRIDestroy(aclmdlRI modelRI);

#ifdef __cplusplus
}
#endif

#endif  // TORCH_BACKEND_NPU_ACL_MDL_H_
