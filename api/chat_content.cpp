// Content parts of chat messages: text joined or kept, images turned into placeholders and
// URLs, every other kind refused by name.
#include "api/chat_content.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace actorllm::api {
namespace {

using json = nlohmann::json;

/// The part types OpenAI and vLLM define that carry media this server does not take.
constexpr std::string_view unsupported_media[] = {"input_audio", "audio_url", "video_url",   "file",
                                                  "input_file",  "image_pil", "image_embeds"};

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

/// The URL of an image_url part, or the fault.
std::string read_image_url(const json& part, std::string& url) {
  auto field = part.find("image_url");
  if (field == part.end() || field->is_null())
    return "an image_url part needs image_url, an object with a url";
  const json* given = &*field;
  if (field->is_object()) {
    if (auto detail = field->find("detail"); detail != field->end() && !detail->is_null()) {
      if (*detail != "auto" && *detail != "low" && *detail != "high")
        return "image_url.detail must be auto, low or high";
    }
    auto inner = field->find("url");
    given = inner == field->end() ? nullptr : &*inner;
  }
  if (!given || !given->is_string())
    return "an image_url part needs image_url.url, a data:, http(s):// or file:// URL";
  url = given->get<std::string>();
  if (url.empty()) return "image_url.url must not be empty";
  for (std::string_view scheme : {"data:", "http://", "https://", "file://"})
    if (starts_with_ignoring_case(url, scheme)) return "";
  return "image_url.url must be a data:, http://, https:// or file:// URL, got '" +
         url.substr(0, 32) + (url.size() > 32 ? "...'" : "'");
}

}  // namespace

bool has_image_part(const json& content) {
  if (!content.is_array()) return false;
  return std::any_of(content.begin(), content.end(), [](const json& part) {
    if (!part.is_object()) return false;
    auto type = part.find("type");
    return type != part.end() && *type == "image_url";
  });
}

std::string read_content_parts(const json& parts, bool keep_parts, json& content,
                               std::vector<std::string>& image_urls) {
  std::string text;
  json list = json::array();
  for (const auto& part : parts) {
    auto type = part.is_object() ? part.find("type") : part.end();
    if (type == part.end() || !type->is_string()) return "each content part needs a string type";
    const std::string& kind = type->get_ref<const std::string&>();
    if (kind == "text") {
      auto part_text = part.find("text");
      if (part_text == part.end() || !part_text->is_string())
        return "a text content part needs its text as a string";
      if (keep_parts) list.push_back({{"type", "text"}, {"text", *part_text}});
      if (!text.empty()) text += "\n";
      text += part_text->get_ref<const std::string&>();
    } else if (kind == "image_url") {
      std::string url;
      if (std::string fault = read_image_url(part, url); !fault.empty()) return fault;
      image_urls.push_back(std::move(url));
      list.push_back({{"type", "image"}});
    } else if (std::find(std::begin(unsupported_media), std::end(unsupported_media), kind) !=
               std::end(unsupported_media)) {
      return "content parts of type '" + kind +
             "' are not supported: this server takes text and image_url parts";
    } else {
      return "unknown content part type '" + kind + "' (text or image_url)";
    }
  }
  content = keep_parts ? std::move(list) : json(std::move(text));
  return "";
}

std::optional<api_error> check_image_limits(const generate_request& prompt, int32_t max_images,
                                            const media_policy& policy, const std::string& param) {
  const std::size_t count = prompt.image_urls.size();
  if (count > static_cast<std::size_t>(std::max(max_images, 0)))
    return bad_request("At most " + std::to_string(max_images) +
                           " image(s) may be provided in one prompt (--limit-mm-per-prompt); "
                           "this one has " +
                           std::to_string(count),
                       param);
  for (const std::string& url : prompt.image_urls)
    if (url.size() > policy.max_url_bytes())
      return bad_request("an image URL of " + std::to_string(url.size()) +
                             " bytes is longer than any image of --max-image-bytes (" +
                             std::to_string(policy.max_bytes) + ") can take",
                         param);
  return std::nullopt;
}

}  // namespace actorllm::api
