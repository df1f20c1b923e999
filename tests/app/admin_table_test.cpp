// The tables of `actorllm admin list` and `actorllm admin models list`.
#include "app/admin_table.hpp"

#include <gtest/gtest.h>

namespace actorllm::app {
namespace {

TEST(admin_table, columns_line_up) {
  const std::vector<replica_view> replicas = {
      {0, "cuda:0", 1, "serving", 3, 0, 0.412},
      {12, "remote:gpu-box-7", 2, "draining", 15, 120, 1.0}};
  EXPECT_EQ(replica_table(replicas),
            "ID  DEVICE            WORKERS  STATE     RUNNING  WAITING  KV USE\n"
            " 0  cuda:0                  1  serving         3        0   41.2%\n"
            "12  remote:gpu-box-7        2  draining       15      120  100.0%\n");
}

TEST(admin_table, an_empty_list_says_so) {
  EXPECT_EQ(replica_table({}),
            "ID  DEVICE  WORKERS  STATE  RUNNING  WAITING  KV USE\n"
            "no replicas\n");
}

TEST(admin_table, models_line_up_with_their_errors_below) {
  const std::vector<model_view> models = {
      {"qwen3-0.6b", "/models/qwen3", "loaded", "", int64_t{1288490189}, int64_t{3} << 28, 12, 0.0},
      {"tiny", "/m/t", "draining", "", 900, 1536, 0, 75.6},
      {"old", "/models/old", "failed", "config.json: no such file", 0, 0, 0, 0.0}};
  EXPECT_EQ(model_table(models),
            "NAME        STATE     WEIGHTS   KV CACHE  IN FLIGHT  IDLE  PATH\n"
            "qwen3-0.6b  loaded    1.2 GiB  768.0 MiB         12    0s  /models/qwen3\n"
            "tiny        draining    900 B    1.5 KiB          0   76s  /m/t\n"
            "old         failed        0 B        0 B          0    0s  /models/old\n"
            "old: config.json: no such file\n");
}

TEST(admin_table, an_empty_model_list_says_so) {
  EXPECT_EQ(model_table({}),
            "NAME  STATE  WEIGHTS  KV CACHE  IN FLIGHT  IDLE  PATH\n"
            "no models\n");
}

}  // namespace
}  // namespace actorllm::app
