// The npu device's collectives (DeviceCollectives.h): HCCL, one call each.
//
// HCCL is NCCL-shaped with three differences this file bridges: it has no
// average (Avg is declined, and core sums and divides), no abort (core then
// destroys the communicator, which ends its pending work), and no group
// calls in the releases we target: a group's sends and receives are collected
// and issued as one HcclBatchSendRecv, which runs them together. Streams are
// the ACL streams core hands over as StreamHandle. libhccl.so comes from the
// CANN installation, loaded before the device library like the ACL runtime.
#include <hccl/hccl.h>

#include <cstring>
#include <string>
#include <vector>

#include <torch_backend/DeviceCollectives.h>

namespace {

using torch_backend::CollectiveId;
using torch_backend::CommHandle;
using torch_backend::DType;
using torch_backend::kNotSupported;
using torch_backend::ReduceOp;
using torch_backend::Status;
using torch_backend::StreamHandle;

static_assert(sizeof(HcclRootInfo) <= sizeof(CollectiveId::bytes),
              "HcclRootInfo fits core's collective id");

HcclDataType hccl_type(DType dtype) {
  switch (dtype) {
    case DType::Bool:  // moved as bytes (reductions: hccl_reduction_type)
    case DType::UInt8:
      return HCCL_DATA_TYPE_UINT8;
    case DType::Int8:
      return HCCL_DATA_TYPE_INT8;
    case DType::Int16:
      return HCCL_DATA_TYPE_INT16;
    case DType::Int32:
      return HCCL_DATA_TYPE_INT32;
    case DType::Int64:
      return HCCL_DATA_TYPE_INT64;
    case DType::Float16:
      return HCCL_DATA_TYPE_FP16;
    case DType::BFloat16:
      return HCCL_DATA_TYPE_BFP16;
    case DType::Float32:
      return HCCL_DATA_TYPE_FP32;
    case DType::Float64:
      return HCCL_DATA_TYPE_FP64;
  }
  return HCCL_DATA_TYPE_RESERVED;
}

// HCCL's element type for a reduction of `dtype` with `op`; false where HCCL
// has none (CANN's HCCL reference, Atlas A2: int8, int16, int32, int64,
// float16, float32, bfp16; prod of neither int16 nor bfp16). Core reduces
// Bool as Max or Min, which int8 computes alike; float64 and uint8 are
// declined and core says so.
bool hccl_reduction_type(DType dtype, ReduceOp op, HcclDataType* out) {
  if (dtype == DType::Bool) {
    *out = HCCL_DATA_TYPE_INT8;
    return op == ReduceOp::Max || op == ReduceOp::Min;
  }
  *out = hccl_type(dtype);
  if (dtype == DType::UInt8 || dtype == DType::Float64) {
    return false;
  }
  const bool has_product = dtype != DType::Int16 && dtype != DType::BFloat16;
  return has_product || op != ReduceOp::Product;
}

// false: HCCL has no such operation (Avg).
bool hccl_op(ReduceOp op, HcclReduceOp* out) {
  switch (op) {
    case ReduceOp::Sum:
      *out = HCCL_REDUCE_SUM;
      return true;
    case ReduceOp::Product:
      *out = HCCL_REDUCE_PROD;
      return true;
    case ReduceOp::Min:
      *out = HCCL_REDUCE_MIN;
      return true;
    case ReduceOp::Max:
      *out = HCCL_REDUCE_MAX;
      return true;
    case ReduceOp::Avg:
      return false;
  }
  return false;
}

// HCCL takes non-const buffers where it only reads them.
void* writable(const void* buffer) { return const_cast<void*>(buffer); }
aclrtStream stream_of(StreamHandle stream) {
  return static_cast<aclrtStream>(stream);
}

// The sends and receives of the calling thread's open group, per
// communicator and stream, in issue order.
struct Batch {
  CommHandle comm;
  StreamHandle stream;
  std::vector<HcclSendRecvItem> items;
};
thread_local int group_depth = 0;
thread_local std::vector<Batch> batches;

class NpuCollectives final : public torch_backend::DeviceCollectives {
 public:
  const char* library_name() override { return "HCCL"; }

  Status get_unique_id(CollectiveId* id) override {
    return HcclGetRootInfo(reinterpret_cast<HcclRootInfo*>(id->bytes));
  }

  Status comm_init_rank(CommHandle* comm, int nranks, const CollectiveId& id,
                        int rank) override {
    HcclComm created = nullptr;
    const HcclResult result =
        HcclCommInitRootInfo(static_cast<uint32_t>(nranks),
                             reinterpret_cast<const HcclRootInfo*>(id.bytes),
                             static_cast<uint32_t>(rank), &created);
    *comm = created;
    return result;
  }

  Status comm_destroy(CommHandle comm) override {
    return HcclCommDestroy(comm);
  }

  Status comm_async_error(CommHandle comm, Status* error) override {
    HcclResult async = HCCL_SUCCESS;
    const HcclResult result = HcclGetCommAsyncError(comm, &async);
    *error = async;
    return result;
  }

  Status all_reduce(const void* send, void* recv, std::size_t count,
                    DType dtype, ReduceOp op, CommHandle comm,
                    StreamHandle stream) override {
    HcclReduceOp hccl;
    HcclDataType type;
    return hccl_op(op, &hccl) && hccl_reduction_type(dtype, op, &type)
               ? HcclAllReduce(writable(send), recv, count, type, hccl, comm,
                               stream_of(stream))
               : kNotSupported;
  }

  Status broadcast(void* buffer, std::size_t count, DType dtype, int root,
                   CommHandle comm, StreamHandle stream) override {
    return HcclBroadcast(buffer, count, hccl_type(dtype),
                         static_cast<uint32_t>(root), comm, stream_of(stream));
  }

  Status reduce(const void* send, void* recv, std::size_t count, DType dtype,
                ReduceOp op, int root, CommHandle comm,
                StreamHandle stream) override {
    HcclReduceOp hccl;
    HcclDataType type;
    return hccl_op(op, &hccl) && hccl_reduction_type(dtype, op, &type)
               ? HcclReduce(writable(send), recv, count, type, hccl,
                            static_cast<uint32_t>(root), comm,
                            stream_of(stream))
               : kNotSupported;
  }

  Status all_gather(const void* send, void* recv, std::size_t send_count,
                    DType dtype, CommHandle comm,
                    StreamHandle stream) override {
    return HcclAllGather(writable(send), recv, send_count, hccl_type(dtype),
                         comm, stream_of(stream));
  }

  Status reduce_scatter(const void* send, void* recv, std::size_t recv_count,
                        DType dtype, ReduceOp op, CommHandle comm,
                        StreamHandle stream) override {
    HcclReduceOp hccl;
    HcclDataType type;
    return hccl_op(op, &hccl) && hccl_reduction_type(dtype, op, &type)
               ? HcclReduceScatter(writable(send), recv, recv_count, type, hccl,
                                   comm, stream_of(stream))
               : kNotSupported;
  }

  Status all_to_all(const void* send, void* recv, std::size_t count,
                    DType dtype, CommHandle comm,
                    StreamHandle stream) override {
    const HcclDataType type = hccl_type(dtype);
    return HcclAlltoAll(send, count, type, recv, count, type, comm,
                        stream_of(stream));
  }

  Status send(const void* buffer, std::size_t count, DType dtype, int peer,
              CommHandle comm, StreamHandle stream) override {
    if (group_depth > 0) {
      return collect(HCCL_SEND, writable(buffer), count, dtype, peer, comm,
                     stream);
    }
    return HcclSend(writable(buffer), count, hccl_type(dtype),
                    static_cast<uint32_t>(peer), comm, stream_of(stream));
  }

  Status recv(void* buffer, std::size_t count, DType dtype, int peer,
              CommHandle comm, StreamHandle stream) override {
    if (group_depth > 0) {
      return collect(HCCL_RECV, buffer, count, dtype, peer, comm, stream);
    }
    return HcclRecv(buffer, count, hccl_type(dtype),
                    static_cast<uint32_t>(peer), comm, stream_of(stream));
  }

  // Collectives inside a group are issued at once, in order; sends and
  // receives wait for group_end.
  Status group_start() override {
    ++group_depth;
    return HCCL_SUCCESS;
  }

  Status group_end() override {
    if (group_depth == 0) {
      return HCCL_E_PARA;
    }
    if (--group_depth > 0) {
      return HCCL_SUCCESS;
    }
    std::vector<Batch> issuing = std::move(batches);
    batches.clear();
    for (Batch& batch : issuing) {
      const HcclResult result = HcclBatchSendRecv(
          batch.items.data(), static_cast<uint32_t>(batch.items.size()),
          batch.comm, stream_of(batch.stream));
      if (result != HCCL_SUCCESS) {
        return result;
      }
    }
    return HCCL_SUCCESS;
  }

  std::string error_text(Status status) override {
    const char* text = HcclGetErrorString(static_cast<HcclResult>(status));
    return std::string(text != nullptr ? text : "unknown HCCL error") +
           " (HCCL error " + std::to_string(status) + ")";
  }

 private:
  static Status collect(HcclSendRecvType type, void* buffer, std::size_t count,
                        DType dtype, int peer, CommHandle comm,
                        StreamHandle stream) {
    if (batches.empty() || batches.back().comm != comm ||
        batches.back().stream != stream) {
      batches.push_back({comm, stream, {}});
    }
    batches.back().items.push_back(
        {type, buffer, count, hccl_type(dtype), static_cast<uint32_t>(peer)});
    return HCCL_SUCCESS;
  }
};

}  // namespace

TORCH_BACKEND_DEFINE_DEVICE_COLLECTIVES(NpuCollectives)
