// http(s) URLs for the media fetcher: parsing, writing back, and redirects' Locations.
#include "media/web_url.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace actorllm::media {
namespace {

std::string lower_ascii(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Path and query as a request line takes them: the fragment dropped, bytes outside printable
/// ASCII (spaces, UTF-8) percent-encoded as browsers send them.
std::string request_target(std::string_view path) {
  path = path.substr(0, std::min(path.find('#'), path.size()));
  std::string out;
  for (char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte > 0x20 && byte < 0x7f) {
      out += c;
    } else {
      static constexpr char hex[] = "0123456789ABCDEF";
      out += '%';
      out += hex[byte >> 4];
      out += hex[byte & 15];
    }
  }
  if (out.empty() || out[0] != '/') out.insert(out.begin(), '/');
  return out;
}

/// A URL scheme's length at the start of `text` ("file" of "file:..."), or 0 when none.
std::size_t scheme_length(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ':') return i;
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return 0;
  }
  return 0;
}

}  // namespace

std::string web_url::text() const {
  const bool default_port = port == (tls ? "443" : "80");
  const bool ipv6 = host.find(':') != std::string::npos;
  return std::string(tls ? "https://" : "http://") + (ipv6 ? "[" + host + "]" : host) +
         (default_port ? "" : ":" + port) + target;
}

std::optional<web_url> parse_web_url(std::string_view text, std::string& error) {
  web_url url;
  const std::string scheme = lower_ascii(text.substr(0, scheme_length(text)));
  if ((scheme != "http" && scheme != "https") || text.substr(scheme.size(), 3) != "://") {
    error = "not an http:// or https:// URL";
    return std::nullopt;
  }
  url.tls = scheme == "https";
  text.remove_prefix(scheme.size() + 3);
  const std::size_t path_at = std::min(text.find_first_of("/?#"), text.size());
  std::string_view authority = text.substr(0, path_at);
  if (authority.find('@') != std::string_view::npos) {
    error = "URLs with a user name or password are not fetched";
    return std::nullopt;
  }
  std::string_view host = authority, port;
  if (!authority.empty() && authority[0] == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      error = "an IPv6 host must end with ']'";
      return std::nullopt;
    }
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after[0] != ':') {
      error = "unexpected text after the IPv6 host";
      return std::nullopt;
    }
    port = after.empty() ? after : after.substr(1);
  } else if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  const bool host_ok = !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
           c == '_';
  });
  if (!host_ok) {
    error = "the URL has no valid host";
    return std::nullopt;
  }
  url.host = lower_ascii(host);
  url.port = url.tls ? "443" : "80";
  if (!port.empty()) {
    const bool digits = port.size() <= 5 && std::all_of(port.begin(), port.end(), [](char c) {
                          return std::isdigit(static_cast<unsigned char>(c));
                        });
    if (!digits || std::stoi(std::string(port)) < 1 || std::stoi(std::string(port)) > 65535) {
      error = "the URL's port must be in 1..65535";
      return std::nullopt;
    }
    url.port = std::string(port);
  }
  url.target = request_target(text.substr(path_at));
  return url;
}

std::optional<web_url> resolve_location(const web_url& base, std::string_view location,
                                        std::string& error) {
  while (!location.empty() && std::isspace(static_cast<unsigned char>(location.front())))
    location.remove_prefix(1);
  while (!location.empty() && std::isspace(static_cast<unsigned char>(location.back())))
    location.remove_suffix(1);
  if (location.empty()) {
    error = "a redirect without a Location";
    return std::nullopt;
  }
  if (location.substr(0, 2) == "//")
    return parse_web_url(std::string(base.tls ? "https:" : "http:") + std::string(location), error);
  if (scheme_length(location) > 0) {
    auto url = parse_web_url(location, error);
    if (!url) error = "a redirect to '" + std::string(location.substr(0, 64)) + "': " + error;
    return url;
  }
  web_url url = base;
  if (location[0] == '/') {
    url.target = request_target(location);
  } else {
    const std::string_view path =
        std::string_view(base.target)
            .substr(0, std::min(base.target.find('?'), base.target.size()));
    url.target =
        request_target(std::string(path.substr(0, path.rfind('/') + 1)) + std::string(location));
  }
  return url;
}

}  // namespace actorllm::media
