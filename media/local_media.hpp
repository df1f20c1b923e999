#pragma once
/// file:// URLs, read only beneath the folder the server allows (--allowed-local-media-path).
#include <string_view>

#include "media/media_fetch.hpp"

namespace actorllm::media {

/// The bytes of the file `url` names (file:///path or file://localhost/path, %XX escapes
/// decoded). Refused: no allowed folder in `policy`, a path with a `..` component, a path that
/// leaves the folder once symbolic links are resolved (checked again on the file as opened), a
/// missing file, anything but a regular file, and a file over policy.max_bytes (from its size,
/// before it is read).
fetched_media read_local_media(std::string_view url, const media_policy& policy);

}  // namespace actorllm::media
