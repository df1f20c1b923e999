// The NCCL communicator of tensor parallelism on CUDA: built where the toolkit has NCCL; a
// group of one rank sums to itself, on any device; a group of two sums on two devices.
#include "kernels/cuda/nccl_comm.cuh"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "tests/cuda/cuda_test_util.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

TEST(CudaNccl, AvailableWhereTheBuildHasIt) {
#if ACTORLLM_HAS_NCCL
  EXPECT_TRUE(nccl_available());
#else
  EXPECT_FALSE(nccl_available());
  EXPECT_THROW(nccl_comm::new_id(), std::runtime_error);
#endif
}

TEST(CudaNccl, TwoRanksSumOnTheirDevices) {
  REQUIRE_CUDA_DEVICE();
  if (!nccl_available()) GTEST_SKIP() << "built without NCCL";
  if (cuda_device_count() < 2) GTEST_SKIP() << "one CUDA device (NCCL ranks need one each)";
  const nccl_id id = nccl_comm::new_id();
  std::vector<std::vector<float>> results(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank)
    ranks.emplace_back([&, rank] {
      CUDA_CHECK(cudaSetDevice(rank));
      nccl_comm comm(id, 2, rank);  // blocks until both ranks joined
      for (dtype t : all_dtypes()) {
        std::vector<float> values(1000);
        for (size_t i = 0; i < values.size(); ++i) values[i] = float(i % 7) + rank * 0.5f;
        device_tensor data(values, t);
        comm.all_reduce_sum(data.get(), 1000, t, nullptr);
        sync_device();
        const auto sum = data.download();
        for (size_t i = 0; i < values.size(); ++i)
          EXPECT_EQ(sum[i], 2 * float(i % 7) + 0.5f) << dtype_name(t) << " rank " << rank;
      }
    });
  for (auto& r : ranks) r.join();
}

TEST(CudaNccl, OneRankSumsToItself) {
  REQUIRE_CUDA_DEVICE();
  if (!nccl_available()) GTEST_SKIP() << "built without NCCL";
  nccl_comm comm(nccl_comm::new_id(), 1, 0);
  std::vector<float> values{1.5f, -2.0f, 3.25f};
  device_tensor data(values, dtype::f32);
  comm.all_reduce_sum(data.get(), 3, dtype::f32, nullptr);
  sync_device();
  EXPECT_EQ(data.download(), values);
  EXPECT_THROW(nccl_comm(nccl_comm::new_id(), 2, 2), std::invalid_argument);
}

}  // namespace
}  // namespace actorllm::cuda
