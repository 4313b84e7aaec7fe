// The caching device allocator and factory kernels over a counting runtime.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <torch_backend/Allocator.h>

#include "CountingRuntime.h"

namespace torch_backend {
namespace {

using testing::counting_runtime;
using testing::CountingRuntime;

constexpr c10::DeviceType kDevice = c10::DeviceType::PrivateUse1;

// Every test starts from an empty cache on device 0 with fresh counters.
class CachingAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    counting_runtime();
    device_allocator()->emptyCache();
    device_allocator()->resetPeakStats(0);
    device_allocator()->resetAccumulatedStats(0);
    mallocs_ = runtime().mallocs;
    frees_ = runtime().frees;
  }

  CountingRuntime& runtime() { return counting_runtime(); }
  int new_mallocs() { return runtime().mallocs - mallocs_; }
  int new_frees() { return runtime().frees - frees_; }
  c10::CachingDeviceAllocator::DeviceStats stats() {
    return device_allocator()->getDeviceStats(0);
  }
  c10::Stream pool_stream() {
    return c10::impl::VirtualGuardImpl(kDevice).getStreamFromGlobalPool(
        c10::Device(kDevice, 0));
  }

  int mallocs_ = 0;
  int frees_ = 0;
};

TEST_F(CachingAllocatorTest, FreedBlocksAreReusedWithoutTheRuntime) {
  void* first = nullptr;
  {
    c10::DataPtr a = device_allocator()->allocate(4000);
    first = a.get();
  }
  c10::DataPtr b = device_allocator()->allocate(4000);
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(new_mallocs(), 1);
  EXPECT_EQ(new_frees(), 0);
}

TEST_F(CachingAllocatorTest, SmallRequestsSplitOneSegment) {
  c10::DataPtr a = device_allocator()->allocate(1000);
  c10::DataPtr b = device_allocator()->allocate(1000);
  EXPECT_EQ(new_mallocs(), 1);  // one 2 MiB small segment
  EXPECT_EQ(runtime().malloc_calls.back().second, size_t{2} << 20);
  // Sizes round to 512 bytes, so b starts right after a.
  EXPECT_EQ(static_cast<char*>(b.get()) - static_cast<char*>(a.get()), 1024);
  EXPECT_EQ(stats().allocated_bytes[0].current, 2048);
  EXPECT_EQ(stats().requested_bytes[0].current, 2000);
  EXPECT_EQ(stats().segment[0].current, 1);
}

TEST_F(CachingAllocatorTest, FreedNeighboursMergeSoTheSegmentIsReleasable) {
  {
    // Two 1 MiB blocks fill one 2 MiB small segment.
    c10::DataPtr a = device_allocator()->allocate(1 << 20);
    c10::DataPtr b = device_allocator()->allocate(1 << 20);
    EXPECT_EQ(new_mallocs(), 1);
  }
  // Merged back into one whole, unsplit block.
  EXPECT_EQ(stats().inactive_split[0].current, 0);
  EXPECT_EQ(stats().active[0].current, 0);
  device_allocator()->emptyCache();
  EXPECT_EQ(new_frees(), 1);
  EXPECT_EQ(stats().reserved_bytes[0].current, 0);
}

TEST_F(CachingAllocatorTest, SmallBlocksWaitInBinsAndMergeOnEmptyCache) {
  {
    c10::DataPtr a = device_allocator()->allocate(1000);
    c10::DataPtr b = device_allocator()->allocate(1000);
  }
  // Freed small blocks are cached unmerged for exact-size reuse ...
  EXPECT_EQ(stats().active[0].current, 0);
  EXPECT_EQ(stats().allocated_bytes[0].current, 0);
  // ... and merge back when the cache is emptied: the segment is returned.
  device_allocator()->emptyCache();
  EXPECT_EQ(new_frees(), 1);
  EXPECT_EQ(stats().inactive_split[0].current, 0);
  EXPECT_EQ(stats().reserved_bytes[0].current, 0);
}

TEST_F(CachingAllocatorTest, ReuseIsOrderedPerStream) {
  void* on_default = nullptr;
  {
    c10::DataPtr a = device_allocator()->allocate(4096);
    on_default = a.get();
  }
  const c10::Stream other = pool_stream();
  c10::impl::VirtualGuardImpl guard(kDevice);
  const c10::Stream previous = guard.exchangeStream(other);
  c10::DataPtr b = device_allocator()->allocate(4096);
  guard.exchangeStream(previous);
  // A block freed on the default stream is not handed to another stream.
  EXPECT_NE(b.get(), on_default);
  EXPECT_EQ(new_mallocs(), 2);
}

TEST_F(CachingAllocatorTest, RecordStreamDelaysReuseUntilThatStreamIsDone) {
  const c10::Stream other = pool_stream();
  c10::impl::VirtualGuardImpl guard(kDevice);
  void* handle = guard.getStreamNativeHandle(other);
  runtime().hold(handle);
  void* first = nullptr;
  {
    c10::DataPtr a = device_allocator()->allocate(4096);
    first = a.get();
    device_allocator()->recordStream(a, other);
  }
  EXPECT_EQ(stats().active[0].current, 1);  // still in use by `other`
  c10::DataPtr b = device_allocator()->allocate(4096);
  EXPECT_NE(b.get(), first);
  runtime().release(handle);
  c10::DataPtr c = device_allocator()->allocate(4096);
  EXPECT_EQ(c.get(), first);
  EXPECT_EQ(stats().active[0].current, 2);  // b and c
}

TEST_F(CachingAllocatorTest, StatisticsTrackPeaksAndCounts) {
  {
    c10::DataPtr a = device_allocator()->allocate(3 << 20);  // large pool
    c10::DataPtr b = device_allocator()->allocate(512);
  }
  const auto s = stats();
  EXPECT_EQ(s.allocated_bytes[0].current, 0);
  EXPECT_EQ(s.allocated_bytes[0].peak, (3 << 20) + 512);
  EXPECT_EQ(s.allocation[0].allocated, 2);
  EXPECT_EQ(s.allocation[0].freed, 2);
  EXPECT_EQ(s.allocated_bytes[2].peak, 3 << 20);  // large pool
  EXPECT_EQ(s.allocated_bytes[1].peak, 512);      // small pool
  EXPECT_EQ(s.reserved_bytes[0].current, (20 << 20) + (2 << 20));
  EXPECT_EQ(s.num_device_alloc, 2);
  device_allocator()->resetPeakStats(0);
  EXPECT_EQ(stats().allocated_bytes[0].peak, 0);
}

TEST_F(CachingAllocatorTest, OutOfMemoryFreesTheCacheAndRetries) {
  // Cache a free 40 MiB segment, then ask for 50 MiB: it cannot reuse the
  // cached block and does not fit beside it in 64 MiB, so the allocator must
  // release the cache and retry.
  {
    c10::DataPtr cached = device_allocator()->allocate(40 << 20);
  }
  EXPECT_EQ(stats().reserved_bytes[0].current, 40 << 20);
  c10::DataPtr other = device_allocator()->allocate(50 << 20);
  EXPECT_EQ(stats().num_alloc_retries, 1);
  EXPECT_EQ(new_frees(), 1);
}

TEST_F(CachingAllocatorTest, OutOfMemoryErrorReportsSizes) {
  c10::DataPtr held = device_allocator()->allocate(1000);
  try {
    device_allocator()->allocate(runtime().capacity + 1);
    FAIL() << "allocation beyond capacity succeeded";
  } catch (const c10::OutOfMemoryError& e) {
    const std::string message = e.what_without_backtrace();
    EXPECT_NE(message.find("Tried to allocate 64.00 MiB"), std::string::npos)
        << message;
    EXPECT_NE(message.find("total capacity of 64.00 MiB"), std::string::npos)
        << message;
    EXPECT_NE(message.find("1.00 KiB is allocated by PyTorch"),
              std::string::npos)
        << message;
  }
  EXPECT_EQ(stats().num_ooms, 1);
}

TEST_F(CachingAllocatorTest, MemoryFractionCapsReservation) {
  set_memory_fraction(0.25, 0);  // 16 MiB of 64
  EXPECT_THROW(device_allocator()->allocate(20 << 20), c10::OutOfMemoryError);
  c10::DataPtr fits = device_allocator()->allocate(12 << 20);  // own segment
  fits.clear();
  set_memory_fraction(1.0, 0);
  EXPECT_NO_THROW(device_allocator()->allocate(20 << 20));
}

TEST_F(CachingAllocatorTest, AllocatesOnTheCurrentDevice) {
  c10::DeviceGuard guard(c10::Device(kDevice, 1));
  c10::DataPtr ptr = device_allocator()->allocate(1000);
  EXPECT_EQ(ptr.device(), c10::Device(kDevice, 1));
  EXPECT_EQ(runtime().malloc_calls.back().first, 1);
}

TEST_F(CachingAllocatorTest, ZeroBytesNeverReachTheRuntime) {
  c10::DataPtr ptr = device_allocator()->allocate(0);
  EXPECT_EQ(ptr.get(), nullptr);
  EXPECT_EQ(new_mallocs(), 0);
}

TEST(Factories, EmptyHonoursTheRequestedDeviceIndex) {
  counting_runtime();
  at::Tensor t = at::empty(
      {4, 4}, at::TensorOptions().device(kDevice, 1).dtype(at::kFloat));
  EXPECT_EQ(t.device().index(), 1);
  EXPECT_EQ(t.storage().data_ptr().device(), c10::Device(kDevice, 1));
}

TEST(Copies, RoundTripThroughDeviceAndAcrossDevices) {
  counting_runtime();
  at::Tensor host = at::arange(12, at::kFloat).reshape({3, 4});
  at::Tensor on0 = host.to(at::Device(kDevice, 0));
  at::Tensor on1 = on0.to(at::Device(kDevice, 1));
  // Non-contiguous read and a dtype-converting write take the general path.
  at::Tensor back = on1.t().to(at::kCPU).to(at::kDouble);
  EXPECT_TRUE(back.equal(host.t().to(at::kDouble)));
  EXPECT_NE(on0.data_ptr(), host.data_ptr());
}

}  // namespace
}  // namespace torch_backend

namespace torch_backend {
namespace {

// The counting runtime is not host-addressable, so ops without a device
// kernel take the copying fallback: arguments to the host, results back.
TEST(CopyFallback, OpsRunOnTheHostAndResultsComeBack) {
  counting_runtime();
  const at::Device dev(kDevice, 1);
  at::Tensor a = at::arange(6, at::kFloat).reshape({2, 3});
  at::Tensor b = at::full({2, 3}, 2.0f);
  at::Tensor sum = at::add(a.to(dev), b.to(dev));
  EXPECT_EQ(sum.device(), dev);
  EXPECT_TRUE(sum.cpu().equal(a + b));
  at::Tensor inplace = a.to(dev);
  inplace.mul_(3);  // mutated arguments are written back to the device
  EXPECT_TRUE(inplace.cpu().equal(a * 3));
  EXPECT_TRUE(at::cat({a.to(dev), b.to(dev)}).cpu().equal(at::cat({a, b})));
}

}  // namespace
}  // namespace torch_backend
