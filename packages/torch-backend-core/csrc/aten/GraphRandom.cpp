#include "GraphRandom.h"

#include <array>
#include <atomic>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <torch_backend/Generator.h>

#include "../runtime/Capture.h"
#include "../runtime/Streams.h"

namespace torch_backend {
namespace {

// Enough for every dropout of a large model's step; 32 KiB of device memory.
constexpr std::int64_t kSlots = 4096;

std::array<std::atomic<CapturedSeeds*>, kMaxDevices> capturing{};

std::uint64_t draw(c10::DeviceIndex device) {
  at::Generator generator = default_generator(device);  // shares the state
  std::lock_guard<std::mutex> lock(generator.mutex());
  // Device generators are CPU engines labelled as the device's (Generator.cpp).
  return static_cast<at::CPUGeneratorImpl*>(generator.unsafeGetGeneratorImpl())
      ->random64();
}

}  // namespace

CapturedSeeds::CapturedSeeds(c10::Device device)
    : slots_(at::empty({kSlots}, at::TensorOptions(device).dtype(at::kLong))) {}

const std::uint64_t* CapturedSeeds::next_slot() {
  TORCH_CHECK(taken_ < kSlots, "a graph may hold at most ", kSlots,
              " random kernels (dropout); capture a smaller region");
  const auto* base = static_cast<const std::uint64_t*>(slots_.const_data_ptr());
  return base + taken_++;
}

void CapturedSeeds::refill() {
  if (taken_ == 0) {
    return;
  }
  // Pinned, so the copy is asynchronous and its memory kept until it ran.
  at::Tensor draws = at::empty(
      {taken_}, at::TensorOptions().dtype(at::kLong).pinned_memory(true));
  auto* values = static_cast<std::uint64_t*>(draws.data_ptr());
  const c10::DeviceIndex device = slots_.device().index();
  for (std::int64_t i = 0; i < taken_; ++i) {
    values[i] = draw(device);
  }
  slots_.narrow(0, 0, taken_).copy_(draws, /*non_blocking=*/true);
}

void set_capturing_seeds(c10::DeviceIndex device, CapturedSeeds* seeds) {
  TORCH_CHECK(device >= 0 && device < kMaxDevices, "invalid device ", device);
  capturing[device].store(seeds);
}

CapturedSeeds* capturing_seeds(c10::DeviceIndex device) {
  if (device < 0 || device >= kMaxDevices) {
    return nullptr;
  }
  return capturing[device].load();
}

std::uint64_t kernel_seed(c10::DeviceIndex device, const std::uint64_t** slot) {
  *slot = nullptr;
  CapturedSeeds* seeds = capturing_seeds(device);  // set only while capturing
  if (seeds != nullptr && is_capturing(current_stream(device))) {
    *slot = seeds->next_slot();
    return 0;
  }
  return draw(device);
}

}  // namespace torch_backend
