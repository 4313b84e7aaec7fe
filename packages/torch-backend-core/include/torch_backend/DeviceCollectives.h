// The device-collectives interface: a backend's collective communication
// library (NCCL, HCCL, RCCL, ...) as core's c10d backend uses it.
//
// Like DeviceRuntime.h, this header is free of torch headers, and the
// interface is optional: a device library that does not export
// TORCH_BACKEND_DEVICE_COLLECTIVES_SYMBOL keeps core's staged Gloo backend.
// Its shape is the one NCCL and HCCL share: a communicator per (group,
// device), made from a unique id that one rank creates and core hands to the
// others through the process group's store; collectives enqueued on a stream
// like kernels, returning at once.
//
// In the backend's collectives file (part of the device library):
//   class MyCollectives : public torch_backend::DeviceCollectives { ... };
//   TORCH_BACKEND_DEFINE_DEVICE_COLLECTIVES(MyCollectives)
//
// Conventions:
//  - Every method returns the library's own status code (0: success);
//    error_text() turns a code into words for core's Python errors.
//  - Buffers are device pointers on the communicator's device; counts are in
//    elements of `dtype`. A collective returns once it is enqueued on
//    `stream` (a stream of the communicator's device); its buffers must stay
//    valid until the stream has run it, which core guarantees.
//  - Every rank of a communicator issues the same collectives in the same
//    order, as with NCCL. Core serialises calls on one communicator.
//  - A collective that fails after it was enqueued (a peer vanished, a link
//    failed) must not hang its stream forever once comm_abort is called, and
//    must show in comm_async_error: core's watchdog polls it and aborts.
//  - The shutdown contract of DeviceRuntime.h applies: no Python from the
//    library's threads; core never calls in here after interpreter
//    finalisation began, except comm_abort.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <torch_backend/DType.h>
#include <torch_backend/DeviceRuntime.h>  // Status, StreamHandle, Export

namespace torch_backend {

// Bumped whenever the layout of DeviceCollectives changes; core refuses a
// library built against another version (and keeps staged Gloo).
constexpr int kDeviceCollectivesAbiVersion = 3;

// The bytes that name a communicator being created: NCCL's ncclUniqueId is
// 128 bytes, HCCL's HcclRootInfo 4108. A library uses a prefix of them.
constexpr std::size_t kCollectiveIdBytes = 4108;
struct CollectiveId {
  unsigned char bytes[kCollectiveIdBytes] = {};
};

// An opaque communicator of the library (ncclComm_t, HcclComm).
using CommHandle = void*;

// c10d's reduce operations that a library may support natively. Core maps
// the rest: Bool sums as Max, and where a library declines Avg (returns
// kNotSupported, as HCCL would) core sums and divides; PREMUL_SUM scales
// first and sums.
enum class ReduceOp : std::int8_t { Sum, Product, Min, Max, Avg };

class TORCH_BACKEND_API DeviceCollectives {
 public:
  virtual ~DeviceCollectives();

  // Short name for messages ("NCCL", "HCCL").
  virtual const char* library_name() = 0;

  // --- communicators -----------------------------------------------------
  // Called on one rank (rank 0 of the group); the id travels to the others.
  virtual Status get_unique_id(CollectiveId* id) = 0;
  // Joins communicator `id` as `rank` of `nranks`, on the calling thread's
  // current device (core sets it). Blocks until every rank has joined, as
  // ncclCommInitRank and HcclCommInitRootInfo do.
  virtual Status comm_init_rank(CommHandle* comm, int nranks,
                                const CollectiveId& id, int rank) = 0;
  // Frees the communicator once its enqueued work is done.
  virtual Status comm_destroy(CommHandle comm) = 0;
  // Makes the communicator's pending and future work end at once, failing,
  // and frees it: what core's watchdog calls on a timeout or an error, from
  // its own thread, while streams may be blocked in the communicator's work.
  // Default: kNotSupported, and core calls comm_destroy instead.
  virtual Status comm_abort(CommHandle comm);
  // *async_error = the first error that failed the communicator's enqueued
  // work (kSuccess: none). Called often, from any thread: must be cheap.
  virtual Status comm_async_error(CommHandle comm, Status* async_error) = 0;

  // --- collectives (enqueued on `stream`) ----------------------------------
  // recv[i] = op over ranks of send[i], i < count. send == recv is allowed.
  virtual Status all_reduce(const void* send, void* recv, std::size_t count,
                            DType dtype, ReduceOp op, CommHandle comm,
                            StreamHandle stream) = 0;
  // In place: every rank's buffer becomes root's.
  virtual Status broadcast(void* buffer, std::size_t count, DType dtype,
                           int root, CommHandle comm, StreamHandle stream) = 0;
  // recv (on root only; other ranks' recv is unused) = op over ranks of send.
  virtual Status reduce(const void* send, void* recv, std::size_t count,
                        DType dtype, ReduceOp op, int root, CommHandle comm,
                        StreamHandle stream) = 0;
  // recv[r * send_count + i] = rank r's send[i].
  virtual Status all_gather(const void* send, void* recv,
                            std::size_t send_count, DType dtype,
                            CommHandle comm, StreamHandle stream) = 0;
  // recv[i] = op over ranks of their send[rank * recv_count + i].
  virtual Status reduce_scatter(const void* send, void* recv,
                                std::size_t recv_count, DType dtype,
                                ReduceOp op, CommHandle comm,
                                StreamHandle stream) = 0;
  // Point to point, matched in issue order per pair of ranks.
  virtual Status send(const void* buffer, std::size_t count, DType dtype,
                      int peer, CommHandle comm, StreamHandle stream) = 0;
  virtual Status recv(void* buffer, std::size_t count, DType dtype, int peer,
                      CommHandle comm, StreamHandle stream) = 0;

  // --- optional ----------------------------------------------------------
  // Between group_start and group_end, calls are only collected; group_end
  // issues them together, so sends and receives among the same ranks cannot
  // deadlock on each other (ncclGroupStart / ncclGroupEnd; a library without
  // them may batch, as with HcclBatchSendRecv). Default: kNotSupported, and
  // core then issues point-to-point batches one call at a time.
  virtual Status group_start();
  virtual Status group_end();
  // recv[r * count + i] = rank r's send[rank * count + i]. Default:
  // kNotSupported (core uses grouped send and recv).
  virtual Status all_to_all(const void* send, void* recv, std::size_t count,
                            DType dtype, CommHandle comm, StreamHandle stream);
  // The library's name in flight-recorder dumps, the prefix of each recorded
  // op ("nccl:all_reduce"). PyTorch's analyser (fr_trace) accepts only the
  // libraries it knows (nccl, hccl, mccl, xccl, gloo, ...). Default: nullptr,
  // library_name() in lower case.
  virtual const char* flight_recorder_name();

  // --- errors ------------------------------------------------------------
  virtual std::string error_text(Status status) = 0;
};

}  // namespace torch_backend

// The optional third symbol of a device library (after the runtime and the
// kernels). Core looks it up at activation.
#define TORCH_BACKEND_DEVICE_COLLECTIVES_SYMBOL \
  "torch_backend_device_collectives"

// Place once in the backend's collectives file. CollectivesClass must be
// default-constructible; it is created on first use and never destroyed.
#define TORCH_BACKEND_DEFINE_DEVICE_COLLECTIVES(CollectivesClass)     \
  extern "C" TORCH_BACKEND_EXPORT ::torch_backend::DeviceCollectives* \
  torch_backend_device_collectives(int* abi_version) {                \
    *abi_version = ::torch_backend::kDeviceCollectivesAbiVersion;     \
    static CollectivesClass* instance = new CollectivesClass();       \
    return instance;                                                  \
  }
