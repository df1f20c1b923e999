// The flags of images in prompts: how many one prompt may carry (vLLM's --limit-mm-per-prompt)
// and where they may be fetched from (media_policy).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "config/engine_config.hpp"
#include "config/engine_flags.hpp"

namespace actorllm {
namespace {

/// A count of --limit-mm-per-prompt: N, or {"count": N, "width": W, "height": H, ...} (the
/// sizes are vLLM's profiling hints; nothing is profiled with them here).
std::string read_count(const std::string& modality, const nlohmann::json& value, int64_t& out) {
  const nlohmann::json* count = &value;
  if (value.is_object()) {
    auto it = value.find("count");
    if (it == value.end()) return modality + " needs a count, as {\"count\": 4}";
    count = &*it;
  }
  if (!count->is_number_integer() || count->get<int64_t>() < 0)
    return modality + ": the count must be a whole number >= 0";
  out = count->get<int64_t>();
  return {};
}

/// A host name as --allowed-media-domains takes it: lower case, without scheme, port or path.
std::string read_domain(std::string_view text, std::string& out) {
  out.clear();
  for (char c : text) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool host_chars = std::all_of(out.begin(), out.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
  });
  if (out.empty() || !host_chars)
    return "'" + std::string(text) + "' is not a host name (give example.com, without scheme, " +
           "port or path)";
  return {};
}

}  // namespace

std::string parse_limit_mm_per_prompt(std::string_view text, server_config& out) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return "must be a JSON object, as {\"image\": 4}";
  for (const auto& [modality, value] : json.items()) {
    int64_t count = 0;
    if (auto error = read_count(modality, value, count); !error.empty()) return error;
    if (modality == "image")
      out.max_images_per_prompt = static_cast<int32_t>(std::min<int64_t>(count, INT32_MAX));
    // video, audio, ...: their parts are refused by the API whatever the count.
  }
  return {};
}

void add_media_flags(flag_parser& p, server_config& c) {
  p.add("--limit-mm-per-prompt", "JSON",
        "the most images one prompt may carry, as vLLM's {\"image\": 4} (default 999; 0: "
        "none); more is a 400",
        [&c](std::string_view v) { return parse_limit_mm_per_prompt(v, c); });
  p.add("--allowed-local-media-path", "DIR",
        "image URLs file:// may name regular files beneath this folder (default: none may)",
        [&c](std::string_view v) -> std::string {
          c.media.allowed_local_path = std::filesystem::path(std::string(v));
          return {};
        });
  p.add_values("--allowed-media-domains", "HOST[,HOST...]",
               "http(s) image URLs may name only these hosts (default: any host)",
               [&c](std::string_view v) -> std::string {
                 std::string item;
                 for (size_t start = 0; start <= v.size();) {
                   const size_t comma = std::min(v.find(',', start), v.size());
                   if (comma > start) {
                     if (auto e = read_domain(v.substr(start, comma - start), item); !e.empty())
                       return e;
                     c.media.allowed_domains.push_back(item);
                   }
                   start = comma + 1;
                 }
                 return {};
               });
  p.add("--media-fetch-timeout", "S",
        "seconds one image may take to fetch, from resolving its host to its last byte "
        "(default 5, as vLLM's VLLM_IMAGE_FETCH_TIMEOUT)",
        [&c](std::string_view v) -> std::string {
          double seconds = 0;
          if (auto e = parse_number(v, seconds); !e.empty()) return e;
          // The range is validate()'s; this only keeps the conversion defined.
          seconds = std::clamp(seconds, -1.0, 1e7);
          c.media.timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
          return {};
        });
  p.add("--max-image-bytes", "N",
        "the most bytes one image may take, fetched or decoded from a data: URL (default "
        "20971520, 20 MiB)",
        [&c](std::string_view v) -> std::string {
          int64_t bytes = 0;
          if (auto e = parse_number(v, bytes); !e.empty()) return e;
          c.media.max_bytes = static_cast<size_t>(std::max<int64_t>(bytes, 0));
          return {};
        });
}

}  // namespace actorllm
