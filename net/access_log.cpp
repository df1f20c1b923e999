// The access-log line.
#include "net/access_log.hpp"

#include <algorithm>
#include <cstdio>

namespace actorllm::net {

void log_access(std::string_view peer, std::string_view method, std::string_view target, int status,
                double millis, std::string_view request_id) {
  char line[512];
  const int n = std::snprintf(
      line, sizeof line, "%.*s \"%.*s %.*s\" %d %.1fms %.*s\n", static_cast<int>(peer.size()),
      peer.data(), static_cast<int>(method.size()), method.data(),
      static_cast<int>(std::min<std::size_t>(target.size(), 200)), target.data(), status, millis,
      static_cast<int>(std::min<std::size_t>(request_id.size(), 128)), request_id.data());
  if (n > 0) std::fwrite(line, 1, std::min<std::size_t>(n, sizeof line - 1), stderr);
}

}  // namespace actorllm::net
