#pragma once
/// http:// and https:// image URLs, fetched with Boost.Beast within a deadline.
#include <chrono>
#include <string_view>

#include "media/media_fetch.hpp"

namespace actorllm::media {

/// GETs `url` as media_fetch.hpp describes: done by `deadline` (resolving, connecting, TLS,
/// redirects and reading included) or a timeout error; the body bounded by policy.max_bytes
/// while it is read; each URL, the first and every redirect's, checked against
/// policy.allowed_domains; at most policy.max_redirects redirects.
fetched_media fetch_web_media(std::string_view url, const media_policy& policy,
                              std::chrono::steady_clock::time_point deadline);

}  // namespace actorllm::media
