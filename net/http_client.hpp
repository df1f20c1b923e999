#pragma once
/// A small blocking HTTP/1.1 client for the command line (`actorllm admin`): one request on a
/// fresh connection, with a deadline. Plain http:// only. Include this, not Beast.
///
///   auto url = net::parse_http_url("http://127.0.0.1:8000");
///   net::http_reply r = net::http_fetch(*url, "GET", "/admin/replicas", "", key);
///   if (!r.error.empty()) ...;  // no answer: connection refused, timeout, ...
#include <optional>
#include <string>
#include <string_view>

namespace actorllm::net {

/// Where a server listens, from "http://host[:port][/prefix]".
struct http_url {
  std::string host;
  std::string port = "80";
  std::string prefix;  ///< a path the request paths are appended to ("" or "/api", no '/' last)
};

/// Reads an http:// URL; nullopt with `error` set for anything else.
std::optional<http_url> parse_http_url(std::string_view text, std::string& error);

struct http_reply {
  int status = 0;  ///< 0: no answer (see error)
  std::string body;
  std::string error;  ///< why no answer came: "connection refused", "timed out", ...
};

/// Sends `method` `url.prefix + path` with `body` (as application/json when not empty) and,
/// when `bearer` is not empty, "Authorization: Bearer <bearer>". Waits at most `timeout_s`
/// for the whole exchange. Never throws for a network failure: it is the reply's error.
http_reply http_fetch(const http_url& url, std::string_view method, std::string_view path,
                      std::string_view body, std::string_view bearer, double timeout_s = 30.0);

}  // namespace actorllm::net
