// c10d's tensors and reduce operations in the collective library's terms
// (DeviceCollectives.h): element types, and the reduce operations a library
// has, with what core does for those it lacks.
#pragma once
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <ATen/core/Tensor.h>

#include <optional>

#include <torch_backend/DeviceCollectives.h>

namespace torch_backend::distributed {

// The name Python shows for `op` (ReduceOp.SUM: "SUM").
const char* op_name(c10d::ReduceOp::RedOpType op);

// A dense tensor's memory as the library sees it.
struct Buffer {
  void* data;
  std::size_t count;
  DType dtype;
};

// As raw bytes: for collectives that move data without arithmetic, so any
// dtype (complex, float8, ...) works.
Buffer bytes_of(const at::Tensor& tensor);

// For arithmetic with `op`: complex tensors as their real pairs (sum and
// average only). Throws ValueError/TypeError-like c10 errors, as
// ProcessGroupNCCL does, for a dtype or an operation no library reduces.
Buffer reducible(const at::Tensor& tensor, const c10d::ReduceOp& op,
                 const char* library);

// The library's operation for `op` on `dtype`: Bool sums as Max and
// multiplies as Min; PREMUL_SUM (its factor applied first) is a Sum.
ReduceOp library_op(const c10d::ReduceOp& op, at::ScalarType dtype);

// For PREMUL_SUM: a new tensor, `input` times the operation's factor (a
// number or a one-element tensor); for other operations `input` itself.
at::Tensor premultiplied(const at::Tensor& input, const c10d::ReduceOp& op);

}  // namespace torch_backend::distributed
