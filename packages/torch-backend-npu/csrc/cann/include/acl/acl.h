// Our declarations of CANN's acl/acl.h subset: initialisation, and the base
// and runtime headers. See acl_base.h.
#ifndef TORCH_BACKEND_NPU_ACL_H_
#define TORCH_BACKEND_NPU_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_mdl.h"
#include "acl/acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclError aclInit(const char* configPath);
ACL_FUNC_VISIBILITY aclError aclFinalize();

#ifdef __cplusplus
}
#endif

#endif  // TORCH_BACKEND_NPU_ACL_H_
