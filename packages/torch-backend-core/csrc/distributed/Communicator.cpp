#include "Communicator.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <iterator>
#include <vector>

#include <torch_backend/Runtime.h>

namespace torch_backend::distributed {

Communicator::Communicator(DeviceCollectives& library, CommHandle handle,
                           c10::Device device, c10::Stream stream, int rank,
                           int size)
    : library_(library),
      handle_(handle),
      device_(device),
      stream_(stream),
      rank_(rank),
      size_(size) {}

std::shared_ptr<Communicator> Communicator::create(DeviceCollectives& library,
                                                   c10d::Store& store,
                                                   const std::string& key,
                                                   int rank, int size,
                                                   c10::Device device) {
  CollectiveId id;
  const auto* bytes = reinterpret_cast<const uint8_t*>(id.bytes);
  if (rank == 0) {
    const Status status = library.get_unique_id(&id);
    TORCH_CHECK(status == kSuccess, library.library_name(),
                " get_unique_id failed: ", library.error_text(status));
    store.set(key, std::vector<uint8_t>(bytes, bytes + sizeof(id.bytes)));
  } else {
    const std::vector<uint8_t> published = store.get(key);
    TORCH_CHECK(published.size() == sizeof(id.bytes),
                "the communicator id in the store has ", published.size(),
                " bytes, not ", sizeof(id.bytes));
    std::memcpy(id.bytes, published.data(), published.size());
  }
  const c10::impl::VirtualGuardImpl guard_impl(device.type());
  const c10::Device previous = guard_impl.exchangeDevice(device);
  CommHandle handle = nullptr;
  const Status status = library.comm_init_rank(&handle, size, id, rank);
  guard_impl.setDevice(previous);
  if (status != kSuccess) {
    C10_THROW_ERROR(DistBackendError,
                    std::string(library.library_name()) +
                        " could not create the communicator of rank " +
                        std::to_string(rank) + " of " + std::to_string(size) +
                        " on " + device.str() + ": " +
                        library.error_text(status));
  }
  const c10::Stream stream =
      guard_impl.getStreamFromGlobalPool(device, /*isHighPriority=*/true);
  return std::shared_ptr<Communicator>(
      new Communicator(library, handle, device, stream, rank, size));
}

Communicator::~Communicator() {
  if (!aborted_.exchange(true)) {
    library_.comm_destroy(handle_);
  }
}

bool Communicator::while_usable(const std::function<void()>& calls) {
  const std::shared_lock<std::shared_mutex> using_it(in_use_);
  if (aborted_.load()) {
    return false;
  }
  calls();
  return true;
}

void Communicator::check(Status status, const char* what) const {
  if (status == kSuccess) {
    return;
  }
  C10_THROW_ERROR(DistBackendError, std::string(library_.library_name()) + " " +
                                        what + " failed on " + describe() +
                                        ": " + library_.error_text(status));
}

std::string Communicator::async_error() const {
  const std::shared_lock<std::shared_mutex> using_it(in_use_);
  if (aborted_.load()) {
    return "the communicator was aborted";
  }
  Status error = kSuccess;
  const Status status = library_.comm_async_error(handle_, &error);
  if (status != kSuccess) {
    return "its asynchronous error could not be queried: " +
           library_.error_text(status);
  }
  return error == kSuccess ? std::string() : library_.error_text(error);
}

void Communicator::abort() noexcept {
  const std::unique_lock<std::shared_mutex> exclusive(in_use_);
  if (aborted_.exchange(true)) {
    return;
  }
  if (library_.comm_abort(handle_) == kNotSupported) {
    library_.comm_destroy(handle_);
  }
}

std::string Communicator::describe() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
         " on " + device_.str();
}

}  // namespace torch_backend::distributed
