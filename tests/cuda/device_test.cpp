// Device discovery and error checks. These run everywhere: without a driver the count is 0
// and a failing call still names itself.
#include "kernels/cuda/device.cuh"

#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/check.cuh"

namespace actorllm::cuda {
namespace {

TEST(CudaDevice, CountIsZeroOrMoreAndNeverThrows) {
  EXPECT_GE(cuda_device_count(), 0);
  EXPECT_GE(cuda_device_count(), 0);  // a second call after a failed first one
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
