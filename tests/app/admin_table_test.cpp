// The replica table of `actorllm admin list`.
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

}  // namespace
}  // namespace actorllm::app
