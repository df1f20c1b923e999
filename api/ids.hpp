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
/// The same from the system's entropy source (std::random_device), for ids that grant access
/// to what they name (a stored response): one cannot be predicted from ids seen before.
std::string unguessable_id(std::string_view prefix);
int64_t unix_now();

}  // namespace actorllm::api
