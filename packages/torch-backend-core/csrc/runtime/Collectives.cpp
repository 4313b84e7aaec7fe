// The default methods of the device library's optional collectives
// (DeviceCollectives.h); Runtime.cpp finds the library's instance.
#include <torch_backend/DeviceCollectives.h>

namespace torch_backend {

DeviceCollectives::~DeviceCollectives() = default;

Status DeviceCollectives::comm_abort(CommHandle) { return kNotSupported; }
Status DeviceCollectives::group_start() { return kNotSupported; }
Status DeviceCollectives::group_end() { return kNotSupported; }
Status DeviceCollectives::all_to_all(const void*, void*, std::size_t, DType,
                                     CommHandle, StreamHandle) {
  return kNotSupported;
}
const char* DeviceCollectives::flight_recorder_name() { return nullptr; }

}  // namespace torch_backend
