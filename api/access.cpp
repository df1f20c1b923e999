// API keys, CORS, and the Host, Origin and Content-Type checks.
#include "api/access.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace actorllm::api {
namespace {

/// Whether `authorization` is "Bearer <key>", comparing every byte whatever the first
/// difference, so that timing does not leak the key. An empty key matches nothing.
bool bearer_matches(const std::string& key, std::string_view authorization) {
  if (key.empty()) return false;
  // The scheme is case-insensitive (RFC 9110 11.1); the token is not.
  constexpr std::string_view scheme = "bearer ";
  if (authorization.size() < scheme.size()) return false;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i]) return false;
  const std::string_view given = authorization.substr(scheme.size());
  unsigned diff = given.size() != key.size();
  for (std::size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i]) ^ static_cast<unsigned char>(key[i % key.size()]);
  }
  return diff == 0;
}

}  // namespace

bool needs_api_key(endpoint target) {
  switch (target) {
    case endpoint::health:
    case endpoint::version:
    case endpoint::metrics:
    case endpoint::web_page:
    case endpoint::web_asset:
      return false;
    default:
      return true;
  }
}

bool authorized(const server_config& config, std::string_view authorization) {
  return config.api_key.empty() || bearer_matches(config.api_key, authorization);
}

namespace {

/// Calls `each` with every comma-separated, space-trimmed entry of `list`.
template <class F>
void for_each_entry(std::string_view list, F each) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view entry = list.substr(0, comma);
    while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
    while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
    each(entry);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
}

}  // namespace

std::string websocket_authorization(std::string_view offered_protocols) {
  std::string authorization;
  for_each_entry(offered_protocols, [&](std::string_view entry) {
    constexpr std::string_view prefix = "bearer.";
    if (authorization.empty() && entry.size() > prefix.size() && entry.starts_with(prefix))
      authorization = "Bearer " + std::string(entry.substr(prefix.size()));
  });
  return authorization;
}

bool offers_actorllm_protocol(std::string_view offered_protocols) {
  bool offered = false;
  for_each_entry(offered_protocols,
                 [&](std::string_view entry) { offered |= entry == "actorllm"; });
  return offered;
}

bool admin_authorized(const server_config& config, std::string_view authorization) {
  return bearer_matches(config.admin_api_key, authorization);
}

std::string cors_allow_origin(const server_config& config, std::string_view origin) {
  for (const auto& allowed : config.allowed_origins) {
    if (allowed == "*") return "*";
    if (!origin.empty() && allowed == origin) return std::string(origin);
  }
  return {};
}

bool origin_allowed(const server_config& config, std::string_view origin, std::string_view host) {
  if (!cors_allow_origin(config, origin).empty()) return true;
  for (std::string_view scheme : {"http://", "https://"})
    if (!host.empty() && origin.size() == scheme.size() + host.size() &&
        origin.starts_with(scheme) && origin.substr(scheme.size()) == host)
      return true;
  return false;
}

namespace {

std::string lowercase(std::string_view text) {
  std::string out;
  for (char c : text) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

}  // namespace

bool host_allowed(const server_config& config, std::string_view host) {
  for (const auto& allowed : config.allowed_hosts)
    if (allowed == "*") return true;
  if (host.starts_with('[')) {
    // An IPv6 literal, with or without a port after the bracket.
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty() &&
        (!rest.starts_with(':') || !std::all_of(rest.begin() + 1, rest.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        })))
      return false;
    in6_addr v6{};
    return inet_pton(AF_INET6, std::string(host.substr(1, close - 1)).c_str(), &v6) == 1;
  }
  const size_t colon = host.rfind(':');
  std::string name = lowercase(colon == std::string_view::npos ? host : host.substr(0, colon));
  if (name.ends_with('.')) name.pop_back();
  if (name.empty()) return false;
  in_addr v4{};
  if (inet_pton(AF_INET, name.c_str(), &v4) == 1) return true;
  if (name == "localhost" || name.ends_with(".localhost")) return true;
  for (const auto& allowed : config.allowed_hosts) {
    std::string entry = lowercase(allowed);
    if (entry.ends_with('.')) entry.pop_back();
    if (entry == name) return true;
  }
  return false;
}

bool is_json_content_type(std::string_view content_type) {
  std::string type;
  for (char c : content_type.substr(0, content_type.find(';')))
    if (c != ' ' && c != '\t')
      type.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return type == "application/json" ||
         (type.starts_with("application/") && type.ends_with("+json"));
}

}  // namespace actorllm::api
