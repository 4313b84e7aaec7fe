// One communicator of the device's collective library (DeviceCollectives.h)
// for one process group on one device: made from an id that rank 0 creates
// and hands to the others through the group's store, with the stream its
// collectives run on.
#pragma once
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <torch_backend/DeviceCollectives.h>

namespace torch_backend::distributed {

class Communicator {
 public:
  // Joins the group's communicator on `device` as `rank` of `size`; `key`
  // names it in the store (the same on every rank). Blocks until every rank
  // has joined; a rank that never publishes or fetches the id fails the
  // store's wait with its timeout.
  static std::shared_ptr<Communicator> create(DeviceCollectives& library,
                                              c10d::Store& store,
                                              const std::string& key, int rank,
                                              int size, c10::Device device);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  DeviceCollectives& library() const { return library_; }
  CommHandle handle() const { return handle_; }
  c10::Device device() const { return device_; }
  // The stream collectives are enqueued on (from the device's pool).
  c10::Stream stream() const { return stream_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Throws c10::DistBackendError naming `what`, the library and this
  // communicator if `status` is an error.
  void check(Status status, const char* what) const;
  // The library's asynchronous error, as a message ("" while there is none).
  std::string async_error() const;
  // Runs `calls` (calls of the library on this communicator) unless it was
  // aborted, and holds abort() back until they return: aborting frees the
  // library's communicator. Returns false, running nothing, once aborted.
  bool while_usable(const std::function<void()>& calls);
  // Ends pending and future work, failing it (comm_abort, or comm_destroy
  // where the library has no abort). Idempotent; from any thread.
  void abort() noexcept;
  bool aborted() const { return aborted_.load(); }
  // "rank 0 of 2 on fake:0"
  std::string describe() const;

 private:
  Communicator(DeviceCollectives& library, CommHandle handle,
               c10::Device device, c10::Stream stream, int rank, int size);

  DeviceCollectives& library_;
  CommHandle handle_;
  c10::Device device_;
  c10::Stream stream_;
  int rank_;
  int size_;
  std::atomic<bool> aborted_{false};
  mutable std::shared_mutex in_use_;  // shared: library calls; unique: abort
};

}  // namespace torch_backend::distributed
