#include "ShmCollectives.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

namespace shm_interconnect {
namespace {

// reduce_scatter's and all_to_all's shape: `send` holds a block of `block`
// bytes for every rank, side by side; chunk by chunk, each rank publishes
// its blocks' chunks and hands `collect(at, n, parts)` the chunks meant for
// it, one per rank.
template <typename Collect>
Status scatter_exchange(Comm& comm, const char* send, std::size_t block,
                        std::size_t element, Collect collect) {
  const std::size_t limit = kHalfBytes / comm.nranks;
  return in_chunks(block, element, limit, [&](auto at, auto n) {
    return exchange(
        comm,
        [&](char* mine) {
          for (int r = 0; r < comm.nranks; ++r) {
            std::memcpy(mine + r * n, send + r * block + at, n);
          }
        },
        [&](auto slot_of) {
          std::vector<const char*> parts;
          for (int r = 0; r < comm.nranks; ++r) {
            parts.push_back(slot_of(r) + comm.rank * n);
          }
          collect(at, n, parts);
        });
  });
}

}  // namespace

Status all_reduce(Comm& comm, const char* send, char* recv, std::size_t count,
                  DType dtype, ReduceOp op) {
  const std::size_t size = element_size(dtype);
  return in_chunks(count * size, size, kHalfBytes, [&](auto at, auto n) {
    // Rank r's share: elements [r * share, (r + 1) * share) of the chunk.
    const std::size_t elements = n / size;
    const std::size_t share = (elements + comm.nranks - 1) / comm.nranks;
    auto bounds = [&](int r) {
      const std::size_t first = std::min(elements, r * share);
      return std::make_pair(first * size,
                            (std::min(elements, first + share) - first));
    };
    return exchange_reduced(
        comm, [&](char* mine) { std::memcpy(mine, send + at, n); },
        [&](auto slot_of) {
          const auto [offset, length] = bounds(comm.rank);
          std::vector<const char*> parts;
          for (int r = 0; r < comm.nranks; ++r) {
            parts.push_back(slot_of(r) + offset);
          }
          reduce_into(slot_of(comm.rank) + offset, parts, length, dtype, op);
        },
        [&](auto slot_of) {
          for (int r = 0; r < comm.nranks; ++r) {
            const auto [offset, length] = bounds(r);
            std::memcpy(recv + at + offset, slot_of(r) + offset, length * size);
          }
        });
  });
}

Status broadcast(Comm& comm, char* data, std::size_t count, DType dtype,
                 int root) {
  if (root < 0 || root >= comm.nranks) {
    return kInvalidArgument;
  }
  const std::size_t size = element_size(dtype);
  return in_chunks(count * size, size, kHalfBytes, [&](auto at, auto n) {
    return exchange(
        comm,
        [&](char* mine) {
          if (comm.rank == root) {
            std::memcpy(mine, data + at, n);
          }
        },
        [&](auto slot_of) {
          if (comm.rank != root) {
            std::memcpy(data + at, slot_of(root), n);
          }
        });
  });
}

Status reduce(Comm& comm, const char* send, char* recv, std::size_t count,
              DType dtype, ReduceOp op, int root) {
  if (root < 0 || root >= comm.nranks) {
    return kInvalidArgument;
  }
  const std::size_t size = element_size(dtype);
  return in_chunks(count * size, size, kHalfBytes, [&](auto at, auto n) {
    return exchange(
        comm, [&](char* mine) { std::memcpy(mine, send + at, n); },
        [&](auto slot_of) {
          if (comm.rank != root) {
            return;
          }
          std::vector<const char*> parts;
          for (int r = 0; r < comm.nranks; ++r) {
            parts.push_back(slot_of(r));
          }
          reduce_into(recv + at, parts, n / size, dtype, op);
        });
  });
}

Status all_gather(Comm& comm, const char* send, char* recv,
                  std::size_t send_count, DType dtype) {
  const std::size_t size = element_size(dtype);
  const std::size_t total = send_count * size;
  return in_chunks(total, size, kHalfBytes, [&](auto at, auto n) {
    return exchange(
        comm, [&](char* mine) { std::memcpy(mine, send + at, n); },
        [&](auto slot_of) {
          for (int r = 0; r < comm.nranks; ++r) {
            std::memcpy(recv + r * total + at, slot_of(r), n);
          }
        });
  });
}

Status reduce_scatter(Comm& comm, const char* send, char* recv,
                      std::size_t recv_count, DType dtype, ReduceOp op) {
  const std::size_t size = element_size(dtype);
  return scatter_exchange(comm, send, recv_count * size, size,
                          [&](std::size_t at, std::size_t n,
                              const std::vector<const char*>& parts) {
                            reduce_into(recv + at, parts, n / size, dtype, op);
                          });
}

Status all_to_all(Comm& comm, const char* send, char* recv, std::size_t count,
                  DType dtype) {
  // Rank r's block of every rank, side by side: recv[r * count + i].
  const std::size_t size = element_size(dtype);
  const std::size_t block = count * size;
  return scatter_exchange(comm, send, block, size,
                          [&](std::size_t at, std::size_t n,
                              const std::vector<const char*>& parts) {
                            for (std::size_t r = 0; r < parts.size(); ++r) {
                              std::memcpy(recv + r * block + at, parts[r], n);
                            }
                          });
}

}  // namespace shm_interconnect
