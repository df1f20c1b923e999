// The media fetcher's door: the URL's length and scheme, then the reader of that scheme.
#include "media/media_fetch.hpp"

#include <cctype>
#include <chrono>

#include "media/data_url.hpp"
#include "media/local_media.hpp"
#include "media/web_media.hpp"

namespace actorllm::media {
namespace {

bool url_starts_with(std::string_view url, std::string_view scheme) {
  if (url.size() < scheme.size()) return false;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(url[i])) != scheme[i]) return false;
  return true;
}

}  // namespace

fetched_media media_error(std::string_view url, std::string error, int status) {
  constexpr std::size_t shown = 80;
  fetched_media out;
  out.error = "image URL '" + std::string(url.substr(0, shown)) +
              (url.size() > shown ? "...'" : "'") + ": " + std::move(error);
  out.status = status;
  return out;
}

fetched_media fetch_media(std::string_view url, const media_policy& policy) {
  const auto deadline = std::chrono::steady_clock::now() + policy.timeout;
  if (url.empty()) return media_error(url, "the URL is empty");
  if (url.size() > policy.max_url_bytes())
    return media_error(url, "the URL is " + std::to_string(url.size()) +
                                " bytes, longer than an image of --max-image-bytes (" +
                                std::to_string(policy.max_bytes) + ") can take");
  if (url_starts_with(url, "data:")) return decode_data_url(url, policy.max_bytes);
  if (url_starts_with(url, "file://")) return read_local_media(url, policy);
  if (url_starts_with(url, "http://") || url_starts_with(url, "https://"))
    return fetch_web_media(url, policy, deadline);
  return media_error(url, "only data:, http://, https:// and file:// URLs are fetched");
}

}  // namespace actorllm::media
