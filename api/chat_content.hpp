#pragma once
/// A chat message's list of content parts (OpenAI's shape), read once at the edge.
///
///   {"type": "text", "text": S}
///   {"type": "image_url", "image_url": {"url": U, "detail": "auto" | "low" | "high"}}
///   {"type": "image_url", "image_url": U}                      (vLLM accepts this too)
///
/// U is a data:, http://, https:// or file:// URL; it is fetched later (media/), not here.
/// Audio, video and file parts are refused naming their type, as is any other type.
///
/// A request without images keeps its text parts joined by "\n" into one string, as chat
/// templates of text models expect. A request with images keeps every list of parts as a
/// list: text parts as {"type": "text", "text": S} and each image as {"type": "image"}, what
/// the chat templates of vision models iterate over; the images' URLs go, in order, to
/// generate_request::image_urls.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/openai_protocol.hpp"
#include "common/generate_request.hpp"
#include "common/media_policy.hpp"

namespace actorllm::api {

/// Whether `content` (a message's content) is a list holding an image_url part.
bool has_image_part(const nlohmann::json& content);

/// Reads a list of parts into the content the chat carries (`keep_parts`: the request has
/// images, so the list stays a list) and appends image URLs to `image_urls`. Returns the
/// fault as one line, or "".
std::string read_content_parts(const nlohmann::json& parts, bool keep_parts,
                               nlohmann::json& content, std::vector<std::string>& image_urls);

/// The server's bounds on a prompt's images: at most `max_images` of them (a 400 naming
/// --limit-mm-per-prompt), none with a URL longer than policy.max_url_bytes() (a data: URL
/// that could not decode within --max-image-bytes). `param`: the field to blame.
std::optional<api_error> check_image_limits(const generate_request& prompt, int32_t max_images,
                                            const media_policy& policy, const std::string& param);

}  // namespace actorllm::api
