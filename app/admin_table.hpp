#pragma once
/// The tables that `actorllm admin list` and `actorllm admin models list` print.
#include <string>
#include <vector>

#include "common/admin_port.hpp"
#include "common/model_admin_port.hpp"

namespace actorllm::app {

/// One header line and one line per replica, columns aligned, every line ending in '\n':
///
///   ID  DEVICE  WORKERS  STATE    RUNNING  WAITING  KV USE
///    0  cuda:0        1  serving        3        0   41.2%
///
/// "no replicas" under the header when the list is empty.
std::string replica_table(const std::vector<replica_view>& replicas);

/// One header line and one line per model, then one line "NAME: ERROR" per model with an
/// error; byte counts in B, KiB, MiB or GiB, idle time in whole seconds:
///
///   NAME  STATE     WEIGHTS   KV CACHE  IN FLIGHT  IDLE  PATH
///   qwen  loaded    1.4 GiB  256.0 MiB          2    0s  /models/qwen3
///   old   failed        0 B        0 B          0    0s  /models/old
///   old: config.json: no such file
///
/// "no models" under the header when the list is empty.
std::string model_table(const std::vector<model_view>& models);

}  // namespace actorllm::app
