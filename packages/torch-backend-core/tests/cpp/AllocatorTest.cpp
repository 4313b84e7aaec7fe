// The device allocator and factory kernels over a counting runtime.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include <torch_backend/Allocator.h>

#include "CountingRuntime.h"

namespace torch_backend {
namespace {

using testing::counting_runtime;

TEST(Allocator, AllocatesOnCurrentDeviceAndFreesOnRelease) {
  auto& runtime = counting_runtime();
  const int mallocs = runtime.mallocs;
  const int frees = runtime.frees;
  {
    c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, 1));
    c10::DataPtr ptr = device_allocator()->allocate(1000);
    EXPECT_NE(ptr.get(), nullptr);
    EXPECT_EQ(ptr.device(), c10::Device(c10::DeviceType::PrivateUse1, 1));
    EXPECT_EQ(runtime.mallocs, mallocs + 1);
    EXPECT_EQ(runtime.malloc_calls.back(), std::make_pair(1, size_t{1000}));
    EXPECT_EQ(runtime.used(1), 1000u);
  }
  EXPECT_EQ(runtime.frees, frees + 1);
  EXPECT_EQ(runtime.used(1), 0u);
}

TEST(Allocator, ZeroBytesNeverReachTheRuntime) {
  auto& runtime = counting_runtime();
  const int mallocs = runtime.mallocs;
  c10::DataPtr ptr = device_allocator()->allocate(0);
  EXPECT_EQ(ptr.get(), nullptr);
  EXPECT_EQ(runtime.mallocs, mallocs);
}

TEST(Allocator, OutOfMemoryReportsSizes) {
  auto& runtime = counting_runtime();
  try {
    device_allocator()->allocate(runtime.capacity + 1);
    FAIL() << "allocation beyond capacity succeeded";
  } catch (const c10::OutOfMemoryError& e) {
    const std::string message = e.what_without_backtrace();
    EXPECT_NE(message.find("tried to allocate " +
                           std::to_string(runtime.capacity + 1)),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("counting runtime is full"), std::string::npos)
        << message;
  }
}

TEST(Factories, EmptyHonoursTheRequestedDeviceIndex) {
  auto& runtime = counting_runtime();
  at::Tensor t = at::empty({4, 4}, at::TensorOptions()
                                       .device(c10::DeviceType::PrivateUse1, 1)
                                       .dtype(at::kFloat));
  EXPECT_EQ(t.device().index(), 1);
  EXPECT_EQ(runtime.malloc_calls.back(), std::make_pair(1, size_t{64}));
}

TEST(Copies, RoundTripThroughDeviceAndAcrossDevices) {
  counting_runtime();
  at::Tensor host = at::arange(12, at::kFloat).reshape({3, 4});
  at::Tensor on0 = host.to(at::Device(c10::DeviceType::PrivateUse1, 0));
  at::Tensor on1 = on0.to(at::Device(c10::DeviceType::PrivateUse1, 1));
  // Non-contiguous read and a dtype-converting write take the general path.
  at::Tensor back = on1.t().to(at::kCPU).to(at::kDouble);
  EXPECT_TRUE(back.equal(host.t().to(at::kDouble)));
  EXPECT_NE(on0.data_ptr(), host.data_ptr());
}

}  // namespace
}  // namespace torch_backend
