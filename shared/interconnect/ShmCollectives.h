// Collectives over the shared-memory interconnect (ShmInterconnect.h), on
// host-addressable buffers, run by the calling thread until every rank has
// taken part: what an emulated collective library runs on a stream's worker,
// as NCCL's kernels run on the GPU. Fake's collectives and the ACL emulator's
// HCCL both call these; they differ only in how a call reaches a stream.
// Every rank of `comm` makes the same calls in the same order.
#pragma once

#include <cstddef>

#include "ShmInterconnect.h"

namespace shm_interconnect {

// recv[i] = op over ranks of send[i]; send == recv is allowed. Each rank
// reduces its share of each chunk, then gathers the others' shares.
Status all_reduce(Comm& comm, const char* send, char* recv, std::size_t count,
                  DType dtype, ReduceOp op);
// In place: every rank's data becomes root's.
Status broadcast(Comm& comm, char* data, std::size_t count, DType dtype,
                 int root);
// recv (root only) = op over ranks of send.
Status reduce(Comm& comm, const char* send, char* recv, std::size_t count,
              DType dtype, ReduceOp op, int root);
// recv[r * send_count + i] = rank r's send[i].
Status all_gather(Comm& comm, const char* send, char* recv,
                  std::size_t send_count, DType dtype);
// recv[i] = op over ranks of their send[rank * recv_count + i].
Status reduce_scatter(Comm& comm, const char* send, char* recv,
                      std::size_t recv_count, DType dtype, ReduceOp op);
// recv[r * count + i] = rank r's send[rank * count + i].
Status all_to_all(Comm& comm, const char* send, char* recv, std::size_t count,
                  DType dtype);

}  // namespace shm_interconnect
