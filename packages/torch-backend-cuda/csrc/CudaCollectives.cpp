// The gpu device's collectives (DeviceCollectives.h): NCCL, one call each.
//
// NCCL comes from the nvidia-nccl-cu13 wheel this package depends on (as
// PyTorch's CUDA wheels do); core's native c10d backend ("gpuccl") runs on
// it. Streams are the CUDA streams core hands over as StreamHandle.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <string>
#include <utility>

#include <torch_backend/DeviceCollectives.h>

#include "CudaBackend.h"

namespace {

using torch_backend::CollectiveId;
using torch_backend::CommHandle;
using torch_backend::DType;
using torch_backend::ReduceOp;
using torch_backend::Status;
using torch_backend::StreamHandle;

static_assert(sizeof(ncclUniqueId) <= sizeof(CollectiveId::bytes),
              "ncclUniqueId fits core's collective id");

// NCCL has no 16-bit integers; core passes other dtypes it does not reduce
// as bytes.
constexpr Status kNoSuchType = ncclInvalidArgument;

// NCCL's element type of each dtype core sends (Bool moves as bytes).
constexpr std::pair<DType, ncclDataType_t> kNcclTypes[] = {
    {DType::Bool, ncclUint8},        {DType::UInt8, ncclUint8},
    {DType::Int8, ncclInt8},         {DType::Int32, ncclInt32},
    {DType::Int64, ncclInt64},       {DType::Float16, ncclFloat16},
    {DType::BFloat16, ncclBfloat16}, {DType::Float32, ncclFloat32},
    {DType::Float64, ncclFloat64}};

// false for Int16, which NCCL lacks.
bool nccl_type(DType dtype, ncclDataType_t* type) {
  for (const auto& [ours, nccl] : kNcclTypes) {
    if (ours == dtype) {
      *type = nccl;
      return true;
    }
  }
  return false;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Product:
      return ncclProd;
    case ReduceOp::Min:
      return ncclMin;
    case ReduceOp::Max:
      return ncclMax;
    case ReduceOp::Avg:
      return ncclAvg;
  }
  return ncclSum;
}

ncclComm_t comm_of(CommHandle comm) { return static_cast<ncclComm_t>(comm); }
using gpu::stream_of;

class CudaCollectives final : public torch_backend::DeviceCollectives {
 public:
  const char* library_name() override { return "NCCL"; }

  Status get_unique_id(CollectiveId* id) override {
    ncclUniqueId unique;
    const ncclResult_t result = ncclGetUniqueId(&unique);
    std::memcpy(id->bytes, &unique, sizeof(unique));
    return result;
  }

  Status comm_init_rank(CommHandle* comm, int nranks, const CollectiveId& id,
                        int rank) override {
    ncclUniqueId unique;
    std::memcpy(&unique, id.bytes, sizeof(unique));
    ncclComm_t created = nullptr;
    const ncclResult_t result =
        ncclCommInitRank(&created, nranks, unique, rank);
    *comm = created;
    return result;
  }

  Status comm_destroy(CommHandle comm) override {
    return ncclCommDestroy(comm_of(comm));
  }

  Status comm_abort(CommHandle comm) override {
    return ncclCommAbort(comm_of(comm));
  }

  Status comm_async_error(CommHandle comm, Status* error) override {
    ncclResult_t async = ncclSuccess;
    const ncclResult_t result = ncclCommGetAsyncError(comm_of(comm), &async);
    // ncclInProgress: a non-blocking call still running, not an error.
    *error = async == ncclInProgress ? ncclSuccess : async;
    return result;
  }

  Status all_reduce(const void* send, void* recv, std::size_t count,
                    DType dtype, ReduceOp op, CommHandle comm,
                    StreamHandle stream) override {
    ncclDataType_t type;
    return nccl_type(dtype, &type)
               ? ncclAllReduce(send, recv, count, type, nccl_op(op),
                               comm_of(comm), stream_of(stream))
               : kNoSuchType;
  }

  Status broadcast(void* buffer, std::size_t count, DType dtype, int root,
                   CommHandle comm, StreamHandle stream) override {
    ncclDataType_t type;
    return nccl_type(dtype, &type)
               ? ncclBroadcast(buffer, buffer, count, type, root, comm_of(comm),
                               stream_of(stream))
               : kNoSuchType;
  }

  Status reduce(const void* send, void* recv, std::size_t count, DType dtype,
                ReduceOp op, int root, CommHandle comm,
                StreamHandle stream) override {
    ncclDataType_t type;
    return nccl_type(dtype, &type)
               ? ncclReduce(send, recv, count, type, nccl_op(op), root,
                            comm_of(comm), stream_of(stream))
               : kNoSuchType;
  }

  Status all_gather(const void* send, void* recv, std::size_t send_count,
                    DType dtype, CommHandle comm,
                    StreamHandle stream) override {
    ncclDataType_t type;
    return nccl_type(dtype, &type)
               ? ncclAllGather(send, recv, send_count, type, comm_of(comm),
                               stream_of(stream))
               : kNoSuchType;
  }

  Status reduce_scatter(const void* send, void* recv, std::size_t recv_count,
                        DType dtype, ReduceOp op, CommHandle comm,
                        StreamHandle stream) override {
    ncclDataType_t type;
    return nccl_type(dtype, &type)
               ? ncclReduceScatter(send, recv, recv_count, type, nccl_op(op),
                                   comm_of(comm), stream_of(stream))
               : kNoSuchType;
  }

  Status send(const void* buffer, std::size_t count, DType dtype, int peer,
              CommHandle comm, StreamHandle stream) override {
    ncclDataType_t type;
    return nccl_type(dtype, &type) ? ncclSend(buffer, count, type, peer,
                                              comm_of(comm), stream_of(stream))
                                   : kNoSuchType;
  }

  Status recv(void* buffer, std::size_t count, DType dtype, int peer,
              CommHandle comm, StreamHandle stream) override {
    ncclDataType_t type;
    return nccl_type(dtype, &type) ? ncclRecv(buffer, count, type, peer,
                                              comm_of(comm), stream_of(stream))
                                   : kNoSuchType;
  }

  Status group_start() override { return ncclGroupStart(); }
  Status group_end() override { return ncclGroupEnd(); }

  std::string error_text(Status status) override {
    std::string text = ncclGetErrorString(static_cast<ncclResult_t>(status));
    if (const char* last = ncclGetLastError(nullptr);
        last != nullptr && *last != '\0') {
      text += std::string(": ") + last;
    }
    return text;
  }
};

}  // namespace

TORCH_BACKEND_DEFINE_DEVICE_COLLECTIVES(CudaCollectives)
