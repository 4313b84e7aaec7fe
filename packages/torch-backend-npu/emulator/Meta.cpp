// The ACL emulator's descriptor library (libnnopbase.so): aclTensor,
// aclScalar and the arrays aclnn operators take, as plain host structures.
#include <cstring>

#include "Emulator.h"

namespace {

std::size_t scalar_bytes(aclDataType dtype) {
  switch (dtype) {
    case ACL_BOOL:
    case ACL_INT8:
    case ACL_UINT8:
      return 1;
    case ACL_INT16:
    case ACL_UINT16:
    case ACL_FLOAT16:
    case ACL_BF16:
      return 2;
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_FLOAT:
      return 4;
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
      return 8;
    default:
      return 0;
  }
}

}  // namespace

extern "C" {

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum,
                           aclDataType dataType, const int64_t* stride,
                           int64_t offset, aclFormat format,
                           const int64_t* /*storageDims*/,
                           uint64_t /*storageDimsNum*/, void* tensorData) {
  if (scalar_bytes(dataType) == 0 || (viewDimsNum > 0 && viewDims == nullptr)) {
    acl_emulator::fail(ACL_ERROR_INVALID_PARAM,
                       "aclCreateTensor: unsupported data type or null dims");
    return nullptr;
  }
  auto* tensor = new aclTensor();
  tensor->sizes.assign(viewDims, viewDims + viewDimsNum);
  if (stride != nullptr) {
    tensor->strides.assign(stride, stride + viewDimsNum);
  } else {  // contiguous
    tensor->strides.resize(viewDimsNum);
    int64_t step = 1;
    for (uint64_t d = viewDimsNum; d-- > 0;) {
      tensor->strides[d] = step;
      step *= viewDims[d];
    }
  }
  tensor->offset = offset;
  tensor->dtype = dataType;
  tensor->format = format;
  tensor->data = tensorData;
  return tensor;
}

aclScalar* aclCreateScalar(void* value, aclDataType dataType) {
  const std::size_t bytes = scalar_bytes(dataType);
  if (bytes == 0 || value == nullptr) {
    acl_emulator::fail(ACL_ERROR_INVALID_PARAM,
                       "aclCreateScalar: unsupported data type or null value");
    return nullptr;
  }
  auto* scalar = new aclScalar();
  scalar->dtype = dataType;
  std::memcpy(scalar->bytes, value, bytes);
  return scalar;
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
  auto* array = new aclIntArray();
  array->values.assign(value, value + size);
  return array;
}

aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size) {
  auto* array = new aclBoolArray();
  array->values.assign(value, value + size);
  return array;
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  delete tensor;
  return 0;
}
aclnnStatus aclDestroyScalar(const aclScalar* scalar) {
  delete scalar;
  return 0;
}
aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  delete array;
  return 0;
}
aclnnStatus aclDestroyBoolArray(const aclBoolArray* array) {
  delete array;
  return 0;
}

}  // extern "C"
