// Our declarations of CANN's aclnn/aclnn_base.h: what every aclnn operator
// header includes. Every operator is two calls: XxxGetWorkspaceSize plans the
// call and returns an executor and the scratch memory it needs; Xxx enqueues
// it on a stream with that workspace.
#ifndef TORCH_BACKEND_NPU_ACLNN_BASE_H_
#define TORCH_BACKEND_NPU_ACLNN_BASE_H_

#include "acl/acl_rt.h"
#include "aclnn/acl_meta.h"

#define ACLNN_API __attribute__((visibility("default")))

#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_INNER 561000

// One operator's two calls, with CANN's signatures: the planning call takes
// the operator's arguments followed by the two outputs.
#define TORCH_BACKEND_NPU_DECLARE_ACLNN(Name, ...)                         \
  extern "C" {                                                             \
  ACLNN_API aclnnStatus Name##GetWorkspaceSize(__VA_ARGS__,                \
                                               uint64_t* workspaceSize,    \
                                               aclOpExecutor** executor);  \
  ACLNN_API aclnnStatus Name(void* workspace, uint64_t workspaceSize,      \
                             aclOpExecutor* executor, aclrtStream stream); \
  }

#endif  // TORCH_BACKEND_NPU_ACLNN_BASE_H_
