// Our declarations of the part of CANN's ACL that torch-backend-npu uses, with
// the names, values and signatures CANN publishes (acl/acl_base.h). Used when
// no CANN installation is given at build time (ASCEND_TOOLKIT_HOME); the
// device library then resolves these symbols at load time against the
// libraries of the installation it runs with.
#ifndef TORCH_BACKEND_NPU_ACL_BASE_H_
#define TORCH_BACKEND_NPU_ACL_BASE_H_

#include <stddef.h>
#include <stdint.h>

#define ACL_FUNC_VISIBILITY __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

typedef int aclError;
typedef void* aclrtStream;
typedef void* aclrtEvent;

static const int ACL_SUCCESS = 0;
static const int ACL_ERROR_INVALID_PARAM = 100000;
static const int ACL_ERROR_UNINITIALIZE = 100001;
static const int ACL_ERROR_REPEAT_INITIALIZE = 100002;
static const int ACL_ERROR_BAD_ALLOC = 200000;
static const int ACL_ERROR_INVALID_DEVICE = 200002;

typedef enum {
  ACL_DT_UNDEFINED = -1,
  ACL_FLOAT = 0,
  ACL_FLOAT16 = 1,
  ACL_INT8 = 2,
  ACL_INT32 = 3,
  ACL_UINT8 = 4,
  ACL_INT16 = 6,
  ACL_UINT16 = 7,
  ACL_UINT32 = 8,
  ACL_INT64 = 9,
  ACL_UINT64 = 10,
  ACL_DOUBLE = 11,
  ACL_BOOL = 12,
  ACL_BF16 = 27,
} aclDataType;

typedef enum {
  ACL_FORMAT_UNDEFINED = -1,
  ACL_FORMAT_NCHW = 0,
  ACL_FORMAT_NHWC = 1,
  ACL_FORMAT_ND = 2,
} aclFormat;

ACL_FUNC_VISIBILITY const char* aclGetRecentErrMsg();

#ifdef __cplusplus
}
#endif

#endif  // TORCH_BACKEND_NPU_ACL_BASE_H_
