// Internal: random numbers in graphs. A captured kernel keeps the arguments
// it was launched with, so a seed passed by value would give every replay
// the same numbers. While a stream is captured, core's random kernels read
// their seeds from slots of a device buffer instead, and each replay first
// writes fresh draws from the device's generator into them: one draw per
// slot, in capture order, as the same eager step would draw (the role of
// CUDA's Philox offsets read from device memory).
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>
#include <c10/core/Stream.h>

namespace torch_backend {

class CapturedSeeds {
 public:
  // Allocates the slots on `device` (from the capture's private pool: call
  // it once the capture began).
  explicit CapturedSeeds(c10::Device device);

  // The device address of the next free slot. Throws once all are taken.
  const std::uint64_t* next_slot();
  // Draws one seed per slot taken and copies them into the slots on the
  // current stream of their device, ahead of the graph's launch there.
  void refill();

 private:
  at::Tensor slots_;
  std::int64_t taken_ = 0;
};

// The seeds of the capture in progress on `device`, or null.
void set_capturing_seeds(c10::DeviceIndex device, CapturedSeeds* seeds);
CapturedSeeds* capturing_seeds(c10::DeviceIndex device);

// Where a random kernel on `device`'s current stream gets its seed: a slot
// (*slot set, seed 0) while that stream is captured, else a draw.
std::uint64_t kernel_seed(c10::DeviceIndex device, const std::uint64_t** slot);

}  // namespace torch_backend
