#pragma once
/// data: URLs (RFC 2397) of base64 data, decoded strictly: the standard alphabet, padding to a
/// multiple of four, nothing else (as vLLM's `pybase64.b64decode(..., validate=True)`).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "media/media_fetch.hpp"

namespace actorllm::media {

/// The bytes of `url` (data:<mime>[;param...];base64,<data>); more than `max_bytes` once
/// decoded is refused from its length alone, before anything is decoded.
fetched_media decode_data_url(std::string_view url, std::size_t max_bytes);

/// Strict base64; nullopt for any byte outside the alphabet, a length that is not a multiple
/// of four, or padding anywhere but the last one or two places.
std::optional<std::vector<uint8_t>> decode_base64(std::string_view text);

}  // namespace actorllm::media
