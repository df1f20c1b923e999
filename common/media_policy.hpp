#pragma once
/// Where the images of a request may come from and how much of them is read: what the server's
/// flags (--allowed-media-domains, --allowed-local-media-path, --media-fetch-timeout,
/// --max-image-bytes) set, the API checks URLs against and media/media_fetch.hpp obeys.
/// Passive data: the flags fill it in config/, validate() checks it there.
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace actorllm {

struct media_policy {
  /// The hosts http(s):// URLs may name (exact, case-insensitive); empty: any host.
  std::vector<std::string> allowed_domains;
  /// file:// URLs may name regular files beneath this folder only; empty: none may.
  std::filesystem::path allowed_local_path;
  /// One fetch, from resolving the host to the last byte read (redirects included).
  std::chrono::milliseconds timeout{5000};
  /// The most bytes one image may take once fetched or decoded (20 MiB).
  std::size_t max_bytes = std::size_t{20} << 20;
  /// http(s) redirects followed, each checked against the policy again.
  int max_redirects = 3;

  /// The longest URL worth reading: a data: URL whose base64 decodes to max_bytes, with room
  /// for its `data:<media type>;base64,` head. Longer URLs are refused before any work.
  std::size_t max_url_bytes() const { return (max_bytes + 2) / 3 * 4 + 256; }
};

}  // namespace actorllm
