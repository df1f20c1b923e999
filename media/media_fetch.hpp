#pragma once
/// The bytes behind an image URL of a request, within the server's media_policy
/// (common/media_policy.hpp, filled by --allowed-media-domains, --allowed-local-media-path,
/// --media-fetch-timeout and --max-image-bytes). Blocking: run it off the actors' threads.
///
///   data:<mime>[;...];base64,<data>  strict base64 (padding required, no whitespace), its
///                                    decoded size checked before it is decoded
///   file:///path                     a regular file beneath policy.allowed_local_path (after
///                                    resolving symbolic links; `..` refused), its size checked
///                                    before it is read; refused when the policy names no folder
///   http://, https://                GET with Boost.Beast; policy.timeout covers resolving,
///                                    connecting, TLS and reading, redirects included; the body
///                                    bounded while it is read (Content-Length or chunked);
///                                    every redirect checked against the policy again; https
///                                    verifies the server's certificate and name against the
///                                    system's CAs (OpenSSL's default paths)
///
/// Every failure is a value naming the URL and what went wrong, with the HTTP status to answer:
/// 400 for what the request got wrong (a bad or refused URL, a missing file, a remote error,
/// too large, too slow), 500 for the server's own trouble.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/media_policy.hpp"

namespace actorllm::media {

/// One fetched image: its bytes, or why there are none.
struct fetched_media {
  std::vector<uint8_t> bytes;
  /// The media type the source gave (a data: URL's, or the Content-Type); empty when none.
  std::string content_type;
  std::string error;  ///< empty exactly when `bytes` are the image's
  int status = 0;     ///< with an error: the HTTP status to answer with

  bool ok() const { return error.empty(); }
};

/// Fetches `url` under `policy` as described above.
fetched_media fetch_media(std::string_view url, const media_policy& policy);

/// The failure `error` (about `url`, shortened) with `status`.
fetched_media media_error(std::string_view url, std::string error, int status = 400);

}  // namespace actorllm::media
