#pragma once
/// http:// and https:// URLs as the media fetcher reads them: the parts a request needs, and
/// a redirect's Location resolved against the URL that answered it. Pure; no sockets.
#include <optional>
#include <string>
#include <string_view>

namespace actorllm::media {

struct web_url {
  bool tls = false;          ///< https
  std::string host;          ///< lower case; an IPv6 literal without its brackets
  std::string port;          ///< "80" / "443" unless the URL names one
  std::string target = "/";  ///< path and query, as sent in the request line (no fragment)

  /// The URL written out again (scheme://host[:port]target), as errors name it.
  std::string text() const;
};

/// Reads `text`; nullopt with `error` set for what is not an http(s) URL with a host, for user
/// info (user:password@), a bad port, or bytes that may not stand in a request line.
std::optional<web_url> parse_web_url(std::string_view text, std::string& error);

/// A redirect's Location against `base`: an absolute http(s) URL, //host/path, /path, or a
/// path relative to base's folder. nullopt with `error` set where it is none of them.
std::optional<web_url> resolve_location(const web_url& base, std::string_view location,
                                        std::string& error);

}  // namespace actorllm::media
