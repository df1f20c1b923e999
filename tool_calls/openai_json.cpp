#include "tool_calls/openai_json.hpp"

namespace actorllm::tool_calls {

nlohmann::json to_openai_json(const tool_call& call) {
  return {{"id", call.id},
          {"type", "function"},
          {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

nlohmann::json to_openai_delta(const stream_event& event) {
  if (event.what == stream_event::kind::call_start) {
    return {{"index", event.call_index},
            {"id", event.id},
            {"type", "function"},
            {"function", {{"name", event.name}, {"arguments", ""}}}};
  }
  return {{"index", event.call_index}, {"function", {{"arguments", event.text}}}};
}

}  // namespace actorllm::tool_calls
