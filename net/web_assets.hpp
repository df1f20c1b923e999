#pragma once
/// The web playground's files (web/ at the repository root), compiled into the binary by
/// cmake/EmbedWebAssets.cmake: served at GET / (index.html) and GET /ui/<name>, with no file
/// read at run time and nothing fetched from elsewhere.
#include <span>
#include <string_view>

namespace actorllm::net {

struct web_asset {
  std::string_view name;          ///< its path under web/, as "app.js"
  std::string_view content_type;  ///< from the extension
  std::string_view body;
  std::string_view etag;  ///< a quoted hash of the body, for If-None-Match
};

/// Every embedded file, sorted by name (generated).
std::span<const web_asset> web_assets_table();

/// The file named `name`, or null.
inline const web_asset* find_web_asset(std::string_view name) {
  for (const auto& asset : web_assets_table())
    if (asset.name == name) return &asset;
  return nullptr;
}

}  // namespace actorllm::net
