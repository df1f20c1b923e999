// Anthropic's error object and the statuses it travels with.
#include "api/anthropic_protocol.hpp"

namespace actorllm::api {

int anthropic_status(int status) {
  return status == 503 ? 529 : status;
}

nlohmann::json anthropic_error_object(const api_error& error) {
  const char* type = "invalid_request_error";
  switch (anthropic_status(error.status)) {
    case 401:
      type = "authentication_error";
      break;
    case 403:
      type = "permission_error";
      break;
    case 404:
      type = "not_found_error";
      break;
    case 413:
      type = "request_too_large";
      break;
    case 429:
      type = "rate_limit_error";
      break;
    case 529:
      type = "overloaded_error";
      break;
    default:
      if (error.status >= 500) type = "api_error";
      break;
  }
  return {{"type", "error"}, {"error", {{"type", type}, {"message", error.message}}}};
}

}  // namespace actorllm::api
