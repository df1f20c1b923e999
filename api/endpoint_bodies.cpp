// The bodies of the small endpoints.
#include "api/endpoint_bodies.hpp"

#include <nlohmann/json.hpp>

#include "api/openai_call.hpp"

#ifndef ACTORLLM_VERSION
#define ACTORLLM_VERSION "0.0.0"
#endif

namespace actorllm::api {
namespace {

using json = nlohmann::json;

/// vLLM's model card, with the model's state (ours: vLLM serves one model, always loaded).
json model_object(const model_listing& listing) {
  const model_info& model = listing.info;
  json object = {{"id", model.name},
                 {"object", "model"},
                 {"created", model.created},
                 {"owned_by", "actorllm"},
                 {"root", model.root.empty() ? model.name : model.root},
                 {"parent", nullptr},
                 {"max_model_len", model.max_model_len},
                 {"permission", json::array()},
                 {"state", to_string(listing.state)}};
  if (!listing.error.empty()) object["error"] = listing.error;
  return object;
}

/// A LoRA adapter as vLLM lists it: its folder as root, the base model as parent.
json adapter_object(const model_listing& model, const adapter_info& adapter) {
  json object = model_object(model);
  object["id"] = adapter.name;
  object["root"] = adapter.path;
  object["parent"] = model.info.name;
  return object;
}

}  // namespace

std::string models_json(const std::vector<model_listing>& models) {
  json data = json::array();
  for (const auto& model : models) {
    data.push_back(model_object(model));
    for (const auto& adapter : model.info.adapters) data.push_back(adapter_object(model, adapter));
  }
  return to_wire({{"object", "list"}, {"data", std::move(data)}});
}

std::string model_json(const model_listing& model, std::string_view id) {
  if (const adapter_info* adapter = model.info.find_adapter(id))
    return to_wire(adapter_object(model, *adapter));
  return to_wire(model_object(model));
}

std::string version_json() {
  return to_wire({{"version", ACTORLLM_VERSION}});
}

std::string tokenize_json(const tokenize_result& result) {
  json body = {{"count", result.tokens.size()},
               {"max_model_len", result.max_model_len},
               {"tokens", result.tokens}};
  if (!result.token_strs.empty()) body["token_strs"] = result.token_strs;
  return to_wire(body);
}

std::string detokenize_json(const detokenize_result& result) {
  return to_wire({{"prompt", result.text}});
}

std::string count_tokens_json(const tokenize_result& result) {
  return to_wire({{"input_tokens", result.tokens.size()}});
}

}  // namespace actorllm::api
