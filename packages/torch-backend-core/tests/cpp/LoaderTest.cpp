// Loading device libraries and activating a runtime: every failure is a
// c10::Error with a message that names the problem, never a crash.
#include <gtest/gtest.h>

#include <c10/util/Exception.h>

#include <torch_backend/Activate.h>
#include <torch_backend/Runtime.h>

#include "CountingRuntime.h"

namespace torch_backend {
namespace {

std::string load_error(const std::string& path) {
  try {
    load_device_library(path);
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

TEST(Loader, MissingFileNamesThePath) {
  const std::string message = load_error("/nonexistent/libdevice.so");
  EXPECT_NE(
      message.find("cannot load device library '/nonexistent/libdevice.so'"),
      std::string::npos)
      << message;
}

TEST(Loader, LibraryWithoutEntryPointIsRejected) {
  const std::string message = load_error(NO_ENTRY_POINT_LIB);
  EXPECT_NE(message.find("does not export 'torch_backend_device_runtime'"),
            std::string::npos)
      << message;
}

TEST(Loader, WrongAbiIsRejectedBeforeUse) {
  const std::string message = load_error(WRONG_ABI_LIB);
  EXPECT_NE(message.find("device-runtime ABI " +
                         std::to_string(kDeviceRuntimeAbiVersion + 1)),
            std::string::npos)
      << message;
}

TEST(Activation, SecondActivationThrowsInsteadOfAborting) {
  testing::counting_runtime();  // activates once
  testing::CountingRuntime another;
  try {
    activate(&another);
    FAIL() << "second activation did not throw";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("already active"),
              std::string::npos);
  }
  EXPECT_EQ(&active_runtime(), &testing::counting_runtime());
}

TEST(Activation, DeviceIndexIsChecked) {
  testing::counting_runtime();
  EXPECT_EQ(device_count(), testing::CountingRuntime::kDevices);
  EXPECT_NO_THROW(check_device_index(1));
  EXPECT_THROW(check_device_index(2), c10::Error);
  EXPECT_THROW(check_device_index(-1), c10::Error);
}

TEST(Activation, RuntimeErrorsCarryTheRuntimeText) {
  testing::counting_runtime();
  try {
    TORCH_BACKEND_CHECK(testing::CountingRuntime::kBadDevice);
    FAIL() << "no throw";
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    EXPECT_NE(message.find("counting runtime error"), std::string::npos)
        << message;
  }
  EXPECT_THROW(TORCH_BACKEND_CHECK(testing::CountingRuntime::kOom),
               c10::OutOfMemoryError);
}

}  // namespace
}  // namespace torch_backend
