// The ACL emulator's HCCL (libhccl.so): the subset of CANN's collective
// library that torch-backend-npu calls, for the processes of one machine,
// over the shared-memory interconnect fake's collectives also use
// (shared/interconnect). Each call is a task on the emulator's stream, which
// waits there for its peers as HCCL's tasks wait on the device; the host
// returns at once.
//
// As in HCCL: no average (HCCL_REDUCE_* has none), device buffers only
// (HCCL_E_PTR otherwise), a failed task fails its communicator
// (HcclGetCommAsyncError) rather than its stream, and HcclCommDestroy ends
// the communicator's pending work: torch-backend's core destroys a
// communicator only once nothing uses it, or to abort it.
//
// Faults: ACL_EMULATOR_FAIL=HcclAllReduce:N (any call's name) makes the Nth
// call's task fail asynchronously with HCCL_E_INTERNAL, as a link error would.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "Emulator.h"
#include "ShmCollectives.h"
#include "hccl/hccl.h"

namespace {

using shm_interconnect::Comm;
using shm_interconnect::CommRef;
using torch_backend::DType;
using torch_backend::ReduceOp;
using torch_backend::Status;

std::mutex& registry_mutex() {
  static auto* mutex = new std::mutex();  // leaked: used until the process ends
  return *mutex;
}
std::unordered_map<HcclComm, CommRef>& registry() {
  static auto* comms = new std::unordered_map<HcclComm, CommRef>();
  return *comms;
}

CommRef find(HcclComm handle) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  const auto found = registry().find(handle);
  return found == registry().end() ? nullptr : found->second;
}

bool to_dtype(HcclDataType type, DType* dtype) {
  switch (type) {
    case HCCL_DATA_TYPE_INT8:
      *dtype = DType::Int8;
      return true;
    case HCCL_DATA_TYPE_INT16:
      *dtype = DType::Int16;
      return true;
    case HCCL_DATA_TYPE_INT32:
      *dtype = DType::Int32;
      return true;
    case HCCL_DATA_TYPE_INT64:
      *dtype = DType::Int64;
      return true;
    case HCCL_DATA_TYPE_UINT8:
      *dtype = DType::UInt8;
      return true;
    case HCCL_DATA_TYPE_FP16:
      *dtype = DType::Float16;
      return true;
    case HCCL_DATA_TYPE_BFP16:
      *dtype = DType::BFloat16;
      return true;
    case HCCL_DATA_TYPE_FP32:
      *dtype = DType::Float32;
      return true;
    case HCCL_DATA_TYPE_FP64:
      *dtype = DType::Float64;
      return true;
    default:
      return false;
  }
}

bool to_op(HcclReduceOp op, ReduceOp* out) {
  switch (op) {
    case HCCL_REDUCE_SUM:
      *out = ReduceOp::Sum;
      return true;
    case HCCL_REDUCE_PROD:
      *out = ReduceOp::Product;
      return true;
    case HCCL_REDUCE_MAX:
      *out = ReduceOp::Max;
      return true;
    case HCCL_REDUCE_MIN:
      *out = ReduceOp::Min;
      return true;
    default:
      return false;
  }
}

// The interconnect's status as HCCL reports it; HCCL's own codes pass.
HcclResult to_hccl(Status status) {
  switch (status) {
    case torch_backend::kSuccess:
      return HCCL_SUCCESS;
    case shm_interconnect::kCommAborted:
      return HCCL_E_UNAVAIL;
    case shm_interconnect::kPeerFailed:
      return HCCL_E_REMOTE;
    case shm_interconnect::kPeerExited:
      return HCCL_E_NETWORK;
    case shm_interconnect::kInvalidArgument:
      return HCCL_E_PARA;
    case shm_interconnect::kJoinTimeout:
      return HCCL_E_TIMEOUT;
    case shm_interconnect::kSystemError:
      return HCCL_E_SYSCALL;
    default:
      return static_cast<HcclResult>(status);
  }
}

// A device buffer of the call, translated to the host address the stream's
// task may use, checked while the call is made (HCCL_E_PTR otherwise).
struct Buffer {
  const void* device;
  std::size_t bytes;
};

// Enqueues `run` on `stream` for communicator `handle`, with the host
// addresses of `buffers` in the same order.
HcclResult submit(const char* call, HcclComm handle, aclrtStream stream,
                  std::vector<Buffer> buffers,
                  std::function<Status(Comm&, const std::vector<char*>&)> run) {
  CommRef comm = find(handle);
  if (!comm) {
    return HCCL_E_PARA;
  }
  std::vector<char*> host;
  for (const Buffer& buffer : buffers) {
    if (buffer.bytes == 0) {
      host.push_back(nullptr);
      continue;
    }
    void* address =
        acl_emulator::host_address(buffer.device, buffer.bytes, call);
    if (address == nullptr) {
      return HCCL_E_PTR;
    }
    host.push_back(static_cast<char*>(address));
  }
  const bool injected = acl_emulator::injected_fault(call);
  const aclError queued = acl_emulator::enqueue(
      stream,
      [comm, host = std::move(host), run = std::move(run), injected] {
        // A failed or destroyed communicator runs nothing more.
        if (comm->aborted.load() || comm->async_error.load() != HCCL_SUCCESS) {
          return ACL_SUCCESS;
        }
        const Status status = injected ? HCCL_E_INTERNAL : run(*comm, host);
        if (status != torch_backend::kSuccess) {
          comm->fail(status);
        }
        return ACL_SUCCESS;  // the communicator reports it, not the stream
      },
      call);
  return queued == ACL_SUCCESS ? HCCL_SUCCESS : HCCL_E_RUNTIME;
}

// Checks a call's data type (and reduce operation) before enqueueing it.
#define HCCL_EMULATOR_TYPES(type, dtype) \
  DType dtype;                           \
  if (!to_dtype(type, &dtype)) {         \
    return HCCL_E_NOT_SUPPORT;           \
  }
#define HCCL_EMULATOR_OP(hccl_op, op) \
  ReduceOp op;                        \
  if (!to_op(hccl_op, &op)) {         \
    return HCCL_E_NOT_SUPPORT;        \
  }

// What HCCL reduces (AllReduce, Reduce, ReduceScatter) on Atlas A2 training
// products, as CANN's HCCL reference lists it: int8, int16, int32, int64,
// float16, float32 and bfp16, and prod of neither int16 nor bfp16. No float64,
// no unsigned types (those only move: broadcast, gather, send).
bool hccl_reduces(DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::Int16:
    case DType::BFloat16:
      return op != ReduceOp::Product;
    case DType::Int8:
    case DType::Int32:
    case DType::Int64:
    case DType::Float16:
    case DType::Float32:
      return true;
    default:
      return false;
  }
}
#define HCCL_EMULATOR_REDUCES(dtype, op) \
  if (!hccl_reduces(dtype, op)) {        \
    return HCCL_E_NOT_SUPPORT;           \
  }

}  // namespace

extern "C" {

ACL_EMULATOR_API HcclResult HcclGetRootInfo(HcclRootInfo* rootInfo) {
  if (rootInfo == nullptr) {
    return HCCL_E_PTR;
  }
  static std::atomic<unsigned> counter{0};
  std::random_device entropy;
  std::memset(rootInfo->internal, 0, sizeof(rootInfo->internal));
  std::snprintf(rootInfo->internal, 64, "/acl_emulator_hccl_%d_%u_%08x%08x",
                static_cast<int>(getpid()), counter.fetch_add(1), entropy(),
                entropy());
  return HCCL_SUCCESS;
}

ACL_EMULATOR_API HcclResult HcclCommInitRootInfo(uint32_t nRanks,
                                                 const HcclRootInfo* rootInfo,
                                                 uint32_t rank,
                                                 HcclComm* comm) {
  if (rootInfo == nullptr || comm == nullptr) {
    return HCCL_E_PTR;
  }
  if (nRanks < 1 || nRanks > shm_interconnect::kMaxRanks || rank >= nRanks) {
    return HCCL_E_PARA;
  }
  int32_t device = 0;
  if (aclrtGetDevice(&device) != ACL_SUCCESS) {
    return HCCL_E_RUNTIME;  // HCCL needs the thread's device set
  }
  CommRef joined;
  const Status status =
      shm_interconnect::join(rootInfo->internal, static_cast<int>(nRanks),
                             static_cast<int>(rank), device, &joined);
  if (status != torch_backend::kSuccess) {
    return to_hccl(status);
  }
  const std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[joined.get()] = joined;
  *comm = joined.get();
  return HCCL_SUCCESS;
}

ACL_EMULATOR_API HcclResult HcclCommDestroy(HcclComm comm) {
  CommRef found;
  {
    const std::lock_guard<std::mutex> lock(registry_mutex());
    const auto entry = registry().find(comm);
    if (entry == registry().end()) {
      return HCCL_E_PARA;
    }
    found = std::move(entry->second);
    registry().erase(entry);
  }
  // Pending tasks hold the communicator; they stop waiting for peers now.
  found->aborted.store(true);
  return HCCL_SUCCESS;
}

ACL_EMULATOR_API HcclResult HcclGetCommAsyncError(HcclComm comm,
                                                  HcclResult* asyncError) {
  CommRef found = find(comm);
  if (!found || asyncError == nullptr) {
    return HCCL_E_PARA;
  }
  *asyncError = to_hccl(found->async_error.load());
  return HCCL_SUCCESS;
}

ACL_EMULATOR_API const char* HcclGetErrorString(HcclResult code) {
  switch (code) {
    case HCCL_SUCCESS:
      return "success";
    case HCCL_E_PARA:
      return "parameter error (rank, root, peer, count or communicator)";
    case HCCL_E_PTR:
      return "a buffer is not device memory of the communicator's device";
    case HCCL_E_INTERNAL:
      return "internal error (an injected fault: ACL_EMULATOR_FAIL)";
    case HCCL_E_NOT_SUPPORT:
      return "data type or reduce operation not supported";
    case HCCL_E_UNAVAIL:
      return "the communicator was destroyed";
    case HCCL_E_SYSCALL:
      return "creating or mapping the communicator's shared memory failed";
    case HCCL_E_TIMEOUT:
      return "not every rank joined the communicator in time";
    case HCCL_E_RUNTIME:
      return "an ACL runtime call failed (is a device set on this thread?)";
    case HCCL_E_NETWORK:
      return "a peer rank's process exited during a collective";
    case HCCL_E_REMOTE:
      return "a peer rank's communicator failed";
    default:
      return "HCCL error";
  }
}

ACL_EMULATOR_API HcclResult HcclAllReduce(void* sendBuf, void* recvBuf,
                                          uint64_t count, HcclDataType dataType,
                                          HcclReduceOp op, HcclComm comm,
                                          aclrtStream stream) {
  HCCL_EMULATOR_TYPES(dataType, dtype)
  HCCL_EMULATOR_OP(op, reduce_op)
  HCCL_EMULATOR_REDUCES(dtype, reduce_op)
  const std::size_t bytes = count * torch_backend::element_size(dtype);
  return submit("HcclAllReduce", comm, stream,
                {{sendBuf, bytes}, {recvBuf, bytes}},
                [=](Comm& c, const std::vector<char*>& host) {
                  return shm_interconnect::all_reduce(c, host[0], host[1],
                                                      count, dtype, reduce_op);
                });
}

ACL_EMULATOR_API HcclResult HcclBroadcast(void* buf, uint64_t count,
                                          HcclDataType dataType, uint32_t root,
                                          HcclComm comm, aclrtStream stream) {
  HCCL_EMULATOR_TYPES(dataType, dtype)
  const std::size_t bytes = count * torch_backend::element_size(dtype);
  return submit("HcclBroadcast", comm, stream, {{buf, bytes}},
                [=](Comm& c, const std::vector<char*>& host) {
                  return shm_interconnect::broadcast(c, host[0], count, dtype,
                                                     static_cast<int>(root));
                });
}

ACL_EMULATOR_API HcclResult HcclReduce(void* sendBuf, void* recvBuf,
                                       uint64_t count, HcclDataType dataType,
                                       HcclReduceOp op, uint32_t root,
                                       HcclComm comm, aclrtStream stream) {
  HCCL_EMULATOR_TYPES(dataType, dtype)
  HCCL_EMULATOR_OP(op, reduce_op)
  HCCL_EMULATOR_REDUCES(dtype, reduce_op)
  const CommRef found = find(comm);
  const std::size_t bytes = count * torch_backend::element_size(dtype);
  // recvBuf matters on the root only.
  const bool is_root = found && found->rank == static_cast<int>(root);
  return submit("HcclReduce", comm, stream,
                {{sendBuf, bytes}, {recvBuf, is_root ? bytes : 0}},
                [=](Comm& c, const std::vector<char*>& host) {
                  return shm_interconnect::reduce(c, host[0], host[1], count,
                                                  dtype, reduce_op,
                                                  static_cast<int>(root));
                });
}

ACL_EMULATOR_API HcclResult HcclAllGather(void* sendBuf, void* recvBuf,
                                          uint64_t sendCount,
                                          HcclDataType dataType, HcclComm comm,
                                          aclrtStream stream) {
  HCCL_EMULATOR_TYPES(dataType, dtype)
  const CommRef found = find(comm);
  const std::size_t bytes = sendCount * torch_backend::element_size(dtype);
  const std::size_t ranks = found ? found->nranks : 1;
  return submit("HcclAllGather", comm, stream,
                {{sendBuf, bytes}, {recvBuf, bytes * ranks}},
                [=](Comm& c, const std::vector<char*>& host) {
                  return shm_interconnect::all_gather(c, host[0], host[1],
                                                      sendCount, dtype);
                });
}

ACL_EMULATOR_API HcclResult HcclReduceScatter(void* sendBuf, void* recvBuf,
                                              uint64_t recvCount,
                                              HcclDataType dataType,
                                              HcclReduceOp op, HcclComm comm,
                                              aclrtStream stream) {
  HCCL_EMULATOR_TYPES(dataType, dtype)
  HCCL_EMULATOR_OP(op, reduce_op)
  HCCL_EMULATOR_REDUCES(dtype, reduce_op)
  const CommRef found = find(comm);
  const std::size_t bytes = recvCount * torch_backend::element_size(dtype);
  const std::size_t ranks = found ? found->nranks : 1;
  return submit("HcclReduceScatter", comm, stream,
                {{sendBuf, bytes * ranks}, {recvBuf, bytes}},
                [=](Comm& c, const std::vector<char*>& host) {
                  return shm_interconnect::reduce_scatter(
                      c, host[0], host[1], recvCount, dtype, reduce_op);
                });
}

ACL_EMULATOR_API HcclResult
HcclAlltoAll(const void* sendBuf, uint64_t sendCount, HcclDataType sendType,
             const void* recvBuf, uint64_t recvCount, HcclDataType recvType,
             HcclComm comm, aclrtStream stream) {
  HCCL_EMULATOR_TYPES(sendType, dtype)
  if (sendType != recvType || sendCount != recvCount) {
    return HCCL_E_PARA;  // the emulator has only the even, one-type form
  }
  const CommRef found = find(comm);
  const std::size_t bytes = sendCount * torch_backend::element_size(dtype);
  const std::size_t ranks = found ? found->nranks : 1;
  return submit("HcclAlltoAll", comm, stream,
                {{sendBuf, bytes * ranks}, {recvBuf, bytes * ranks}},
                [=](Comm& c, const std::vector<char*>& host) {
                  return shm_interconnect::all_to_all(c, host[0], host[1],
                                                      sendCount, dtype);
                });
}

ACL_EMULATOR_API HcclResult HcclBatchSendRecv(HcclSendRecvItem* sendRecvInfo,
                                              uint32_t itemNum, HcclComm comm,
                                              aclrtStream stream) {
  if (sendRecvInfo == nullptr && itemNum > 0) {
    return HCCL_E_PTR;
  }
  const CommRef found = find(comm);
  if (!found) {
    return HCCL_E_PARA;
  }
  std::vector<Buffer> buffers;
  std::vector<HcclSendRecvItem> items(sendRecvInfo, sendRecvInfo + itemNum);
  for (const HcclSendRecvItem& item : items) {
    HCCL_EMULATOR_TYPES(item.dataType, dtype)
    if ((item.sendRecvType != HCCL_SEND && item.sendRecvType != HCCL_RECV) ||
        item.remoteRank >= static_cast<uint32_t>(found->nranks) ||
        static_cast<int>(item.remoteRank) == found->rank) {
      return HCCL_E_PARA;
    }
    buffers.push_back(
        {item.buf, item.count * torch_backend::element_size(dtype)});
  }
  // Every send and receive at once: a lane per peer and direction.
  return submit("HcclBatchSendRecv", comm, stream, buffers,
                [items, buffers](Comm& c, const std::vector<char*>& host) {
                  std::vector<shm_interconnect::Lane> lanes;
                  for (const HcclSendRecvItem& item : items) {
                    lanes.emplace_back(&c, static_cast<int>(item.remoteRank),
                                       item.sendRecvType == HCCL_SEND);
                  }
                  std::vector<Status> results(items.size(),
                                              torch_backend::kSuccess);
                  shm_interconnect::run_in_lanes(lanes, [&](std::size_t i) {
                    const int peer = static_cast<int>(items[i].remoteRank);
                    results[i] = items[i].sendRecvType == HCCL_SEND
                                     ? shm_interconnect::send_chunks(
                                           c, host[i], buffers[i].bytes, peer)
                                     : shm_interconnect::recv_chunks(
                                           c, host[i], buffers[i].bytes, peer);
                  });
                  for (const Status status : results) {
                    if (status != torch_backend::kSuccess) {
                      return status;
                    }
                  }
                  return static_cast<Status>(torch_backend::kSuccess);
                });
}

// A batch of one.
ACL_EMULATOR_API HcclResult HcclSend(void* sendBuf, uint64_t count,
                                     HcclDataType dataType, uint32_t destRank,
                                     HcclComm comm, aclrtStream stream) {
  HcclSendRecvItem item{HCCL_SEND, sendBuf, count, dataType, destRank};
  return HcclBatchSendRecv(&item, 1, comm, stream);
}

ACL_EMULATOR_API HcclResult HcclRecv(void* recvBuf, uint64_t count,
                                     HcclDataType dataType, uint32_t srcRank,
                                     HcclComm comm, aclrtStream stream) {
  HcclSendRecvItem item{HCCL_RECV, recvBuf, count, dataType, srcRank};
  return HcclBatchSendRecv(&item, 1, comm, stream);
}

}  // extern "C"
