// Device discovery, error checks and buffers. Most of these run everywhere: without a driver
// the count is 0, device calls fail as cuda_error, a failing call still names itself, and
// empty buffers and bounds checks need no device.
#include "kernels/cuda/device.cuh"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/check.cuh"

namespace actorllm::cuda {
namespace {

TEST(CudaDevice, CountIsTheRuntimesOrZeroAndLeavesNoErrorBehind) {
  cudaGetLastError();  // whatever an earlier test left
  // With no driver every runtime call, this one included, reports the failed start; with a
  // driver, nothing. The count must add no error of its own to that.
  const cudaError_t before = cudaPeekAtLastError();
  const int count = cuda_device_count();
  EXPECT_EQ(cudaPeekAtLastError(), before) << cudaGetErrorName(cudaPeekAtLastError());
  EXPECT_EQ(cuda_device_count(), count);  // a second call, after a possibly failed first one
  int runtime_count = -1;
  const cudaError_t status = cudaGetDeviceCount(&runtime_count);
  cudaGetLastError();
  if (status == cudaSuccess) {
    EXPECT_EQ(count, runtime_count);
  } else {
    EXPECT_EQ(count, 0) << "no driver or no device (" << cudaGetErrorName(status) << ") counts 0";
  }
}

TEST(CudaDevice, DeviceCallsWorkExactlyWhenADeviceIsReported) {
  if (cuda_device_count() > 0) {
    EXPECT_NO_THROW(device_memory_info());
    EXPECT_NO_THROW(device_description());
    EXPECT_NO_THROW(device_buffer(16));
  } else {
    // Reported unusable: every call that needs the device fails as a cuda_error, not a crash.
    EXPECT_THROW(device_memory_info(), cuda_error);
    EXPECT_THROW(device_description(), cuda_error);
    EXPECT_THROW(device_buffer(16), cuda_error);
    EXPECT_THROW(pinned_buffer(16), cuda_error);
  }
  cudaGetLastError();
}

TEST(CudaDevice, EmptyBuffersAndBoundsNeedNoDevice) {
  // Zero bytes allocate nothing, so this holds with or without a device.
  device_buffer empty(0);
  EXPECT_EQ(empty.get(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
  int value = 7;
  EXPECT_NO_THROW(empty.upload(&value, 0));
  EXPECT_NO_THROW(empty.download(&value, 0));
  EXPECT_EQ(value, 7);
  // Past the end is refused before any copy is tried.
  EXPECT_THROW(empty.upload(&value, sizeof(value)), std::out_of_range);
  EXPECT_THROW(empty.download(&value, sizeof(value)), std::out_of_range);
  device_buffer moved = std::move(empty);
  EXPECT_EQ(moved.get(), nullptr);
  EXPECT_EQ(moved.size(), 0u);
  pinned_buffer pinned(0);
  EXPECT_EQ(pinned.get(), nullptr);
  EXPECT_EQ(pinned.size(), 0u);
}

TEST(CudaDevice, CudaCheckThrowsWithExpressionFileAndLine) {
  try {
    CUDA_CHECK(cudaSetDevice(-1));
    FAIL() << "cudaSetDevice(-1) succeeded";
  } catch (const cuda_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaSetDevice(-1)"), std::string::npos) << what;
    EXPECT_NE(what.find("device_test.cpp"), std::string::npos) << what;
  }
}

TEST(CudaDevice, MultiprocessorCountIsTheDriversAndStaysSo) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  EXPECT_GT(sms, 0);
  EXPECT_EQ(multiprocessor_count(), sms);
  EXPECT_EQ(multiprocessor_count(), sms);  // from the cache
}

TEST(CudaDevice, StickyErrorsAreTheOnesThatLoseTheContext) {
  // The faults of a kernel that leave the context unusable, and a few that do not: a bad
  // argument, too little memory, a launch the device cannot fit, no device at all.
  for (cudaError_t e : {cudaErrorIllegalAddress, cudaErrorMisalignedAddress, cudaErrorLaunchFailure,
                        cudaErrorAssert, cudaErrorIllegalInstruction, cudaErrorHardwareStackError})
    EXPECT_TRUE(is_sticky_error(e)) << cudaGetErrorName(e);
  for (cudaError_t e : {cudaSuccess, cudaErrorInvalidValue, cudaErrorMemoryAllocation,
                        cudaErrorLaunchOutOfResources, cudaErrorNoDevice, cudaErrorInvalidDevice})
    EXPECT_FALSE(is_sticky_error(e)) << cudaGetErrorName(e);
}

TEST(CudaDevice, CublasCheckThrowsWithExpression) {
  try {
    CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE);
    FAIL() << "no throw";
  } catch (const cuda_error& e) {
    EXPECT_NE(std::string(e.what()).find("CUBLAS_STATUS_INVALID_VALUE"), std::string::npos)
        << e.what();
  }
}

TEST(CudaDevice, BuffersAllocateAndRoundTrip) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const memory_info info = device_memory_info();
  EXPECT_GT(info.total_bytes, 0u);
  EXPECT_LE(info.free_bytes, info.total_bytes);
  EXPECT_FALSE(device_description().empty());
  std::vector<int> values{1, 2, 3, 4}, back(4, 0);
  device_buffer buf(values.size() * sizeof(int));
  buf.upload(values.data(), values.size() * sizeof(int));
  device_buffer moved = std::move(buf);
  EXPECT_EQ(buf.get(), nullptr);
  moved.download(back.data(), back.size() * sizeof(int));
  EXPECT_EQ(back, values);
  EXPECT_THROW(moved.upload(values.data(), 1000), std::out_of_range);
  pinned_buffer pinned(64);
  EXPECT_NE(pinned.get(), nullptr);
}

}  // namespace
}  // namespace actorllm::cuda
