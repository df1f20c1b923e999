// data: URLs: the header read, the size checked, then strict base64.
#include "media/data_url.hpp"

#include <array>
#include <cctype>
#include <string>

namespace actorllm::media {
namespace {

/// The value of each base64 character, or -1.
constexpr std::array<int8_t, 256> base64_values() {
  std::array<int8_t, 256> values{};
  for (auto& v : values) v = -1;
  constexpr std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (std::size_t i = 0; i < alphabet.size(); ++i)
    values[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
  return values;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace

std::optional<std::vector<uint8_t>> decode_base64(std::string_view text) {
  static constexpr auto values = base64_values();
  if (text.size() % 4 != 0) return std::nullopt;
  std::size_t padding = 0;
  while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') ++padding;
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  uint32_t group = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool pad = i >= text.size() - padding;
    const int8_t v = pad ? 0 : values[static_cast<unsigned char>(text[i])];
    if (v < 0) return std::nullopt;  // '=' before the end lands here too
    group = group << 6 | static_cast<uint32_t>(v);
    if (i % 4 == 3) {
      out.push_back(static_cast<uint8_t>(group >> 16));
      out.push_back(static_cast<uint8_t>(group >> 8));
      out.push_back(static_cast<uint8_t>(group));
      group = 0;
    }
  }
  out.resize(out.size() - padding);
  return out;
}

fetched_media decode_data_url(std::string_view url, std::size_t max_bytes) {
  const std::size_t comma = url.find(',');
  if (url.size() < 5 || !equals_ignoring_case(url.substr(0, 5), "data:") ||
      comma == std::string_view::npos)
    return media_error(url, "a data: URL must be data:<media type>;base64,<data>");
  const std::string_view header = url.substr(5, comma - 5);
  const std::string_view data = url.substr(comma + 1);
  const std::size_t semicolon = header.rfind(';');
  if (semicolon == std::string_view::npos ||
      !equals_ignoring_case(header.substr(semicolon + 1), "base64"))
    return media_error(url, "only base64 data: URLs are supported (data:<media type>;base64,...)");
  // What the data decodes to, from its length: at most 3 bytes per 4 characters.
  const std::size_t padding = data.size() >= 2 && data.substr(data.size() - 2) == "==" ? 2
                              : !data.empty() && data.back() == '='                    ? 1
                                                                                       : 0;
  const std::size_t decoded = data.size() / 4 * 3 - std::min(padding, data.size() / 4 * 3);
  if (decoded > max_bytes)
    return media_error(url, "the image is " + std::to_string(decoded) +
                                " bytes, more than --max-image-bytes (" +
                                std::to_string(max_bytes) + ")");
  auto bytes = decode_base64(data);
  if (!bytes)
    return media_error(url,
                       "the data is not valid base64 (the standard alphabet, padded with '=' "
                       "to a multiple of 4 characters, without spaces or line breaks)");
  if (bytes->empty()) return media_error(url, "the data: URL holds no bytes");
  fetched_media out;
  out.bytes = std::move(*bytes);
  out.content_type = std::string(header.substr(0, header.find(';')));
  return out;
}

}  // namespace actorllm::media
