// OpenAI's error object and the statuses it travels with.
#include "api/openai_protocol.hpp"

namespace actorllm::api {

api_error bad_request(std::string message, std::string param) {
  return api_error{400, std::move(message), "invalid_request_error", std::move(param), {}};
}

api_error not_found(std::string message, std::string code) {
  return api_error{404, std::move(message), "invalid_request_error", {}, std::move(code)};
}

api_error internal_error(std::string message) {
  return api_error{500, std::move(message), "server_error", {}, "internal_error"};
}

api_error engine_error(const std::string& message, int32_t status, const std::string& param) {
  const std::string text = message.empty() ? "the request failed" : message;
  switch (status) {
    case 400:
      return bad_request(text, param);
    case 404: {
      api_error error = not_found(text, "model_not_found");
      error.param = param;
      return error;
    }
    case 429:
      return api_error{429, text, "rate_limit_error", {}, "rate_limit_exceeded"};
    case 503:
      return api_error{503, text, "server_error", {}, "overloaded"};
    default:
      break;
  }
  if (status >= 400 && status < 500)
    return api_error{status, text, "invalid_request_error", param, {}};
  return internal_error(text);
}

nlohmann::json error_object(const api_error& error) {
  auto or_null = [](const std::string& s) {
    return s.empty() ? nlohmann::json() : nlohmann::json(s);
  };
  return {{"error",
           {{"message", error.message},
            {"type", error.type},
            {"param", or_null(error.param)},
            {"code", or_null(error.code)}}}};
}

std::string error_json(const api_error& error) {
  return error_object(error).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace actorllm::api
