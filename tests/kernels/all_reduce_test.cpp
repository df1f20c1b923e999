// The host all-reduce: every rank gets the same sum, and an aborted group releases a rank
// that waits for a peer who will never come.
#include "kernels/cpu/all_reduce.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <thread>
#include <vector>

namespace actorllm {
namespace {

TEST(host_all_reduce, every_rank_gets_the_sum_in_rank_order) {
  const int ranks = 3, n = 5;
  cpu::host_all_reduce group(ranks);
  std::vector<std::vector<float>> data(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < n; ++i) data[r].push_back(float(r * 10 + i));
    threads.emplace_back([&, r] {
      for (int round = 0; round < 3; ++round) group.sum(r, data[r].data(), n);
    });
  }
  for (auto& t : threads) t.join();
  // After round 1 each rank holds 30 + 3i, and every later round triples it.
  for (int r = 0; r < ranks; ++r)
    for (int i = 0; i < n; ++i) EXPECT_EQ(data[r][i], float((30 + 3 * i) * 9)) << r << " " << i;
}

// What a device group hangs on the host group: aborting runs each registered hook once, a
// removed hook never, and a hook added after the abort at once.
TEST(host_all_reduce, abort_runs_the_hooks_still_registered) {
  cpu::host_all_reduce group(2);
  int first = 0, second = 0, late = 0;
  group.add_abort_hook([&] { ++first; });
  const int64_t removed = group.add_abort_hook([&] { ++second; });
  group.remove_abort_hook(removed);
  EXPECT_EQ(first, 0);
  group.abort();
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 0);
  group.abort();  // a second abort runs nothing again
  EXPECT_EQ(first, 1);
  group.add_abort_hook([&] { ++late; });
  EXPECT_EQ(late, 1);
}

// How the ranks of a CUDA group share their NCCL id: rank 1's 128 bytes reach every rank,
// each of the 256 byte values included.
TEST(host_all_reduce, broadcast_gives_every_rank_the_roots_bytes) {
  const int ranks = 3, n = 300;
  cpu::host_all_reduce group(ranks);
  std::vector<std::vector<uint8_t>> bytes(ranks, std::vector<uint8_t>(n));
  for (int r = 0; r < ranks; ++r)
    for (int i = 0; i < n; ++i) bytes[r][i] = static_cast<uint8_t>(r == 1 ? i : 7 * r + 1);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] { group.broadcast(r, 1, bytes[r].data(), n); });
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r)
    for (int i = 0; i < n; ++i) ASSERT_EQ(bytes[r][i], static_cast<uint8_t>(i)) << r << " " << i;
}

TEST(host_all_reduce, abort_releases_a_rank_waiting_for_a_lost_peer) {
  cpu::host_all_reduce group(2);
  std::vector<float> data{1, 2, 3};
  auto waiting = std::async(std::launch::async, [&] {
    try {
      group.sum(0, data.data(), 3);  // rank 1 never arrives
      return false;
    } catch (const cpu::all_reduce_aborted&) {
      return true;
    }
  });
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  group.abort();
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(waiting.get());
  EXPECT_THROW(group.sum(1, data.data(), 3), cpu::all_reduce_aborted);
}

}  // namespace
}  // namespace actorllm
