#pragma once
/// The access log: one line per answered request (or WebSocket call) on stderr.
#include <string_view>

namespace actorllm::net {

/// One compact access-log line on stderr (one write, so lines from threads do not mix).
void log_access(std::string_view peer, std::string_view method, std::string_view target, int status,
                double millis, std::string_view request_id);

}  // namespace actorllm::net
