#pragma once
/// The replica table that `actorllm admin list` prints.
#include <string>
#include <vector>

#include "common/admin_port.hpp"

namespace actorllm::app {

/// One header line and one line per replica, columns aligned, every line ending in '\n':
///
///   ID  DEVICE  WORKERS  STATE    RUNNING  WAITING  KV USE
///    0  cuda:0        1  serving        3        0   41.2%
///
/// "no replicas" under the header when the list is empty.
std::string replica_table(const std::vector<replica_view>& replicas);

}  // namespace actorllm::app
