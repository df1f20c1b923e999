#pragma once
/// The ids and times that answers carry: request ids, object ids, unix seconds.
#include <cstdint>
#include <string>
#include <string_view>

namespace actorllm::api {

/// `header` when it is a sane id (printable, at most 128 bytes), else a fresh random one.
std::string request_id_for(std::string_view header);
/// `prefix` followed by 32 random hex digits.
std::string random_id(std::string_view prefix);
int64_t unix_now();

}  // namespace actorllm::api
