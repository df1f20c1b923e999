#include "api/prompt_logprobs.hpp"

#include <string>

#include "api/text_units.hpp"

namespace actorllm::api {

using json = nlohmann::json;

namespace {

/// The text of the prompt's token `i` ("token_id:N" where the router gave none).
std::string prompt_text(const request_output& out, std::size_t i, int32_t id) {
  return token_text(out.prompt_token_texts, i, id);
}

}  // namespace

json vllm_prompt_logprobs(const request_output& out) {
  if (out.prompt_token_texts.empty()) return json();
  json list = json::array({nullptr});
  for (std::size_t i = 0; i < out.prompt_logprobs.size(); ++i) {
    const token_logprob& lp = out.prompt_logprobs[i];
    json entry = json::object();
    for (std::size_t k = 0; k < lp.top_ids.size() && k < lp.top_logprobs.size(); ++k)
      entry[std::to_string(lp.top_ids[k])] = {
          {"logprob", lp.top_logprobs[k]},
          {"rank", static_cast<int64_t>(k) + 1},
          {"decoded_token", token_text(lp.top_texts, k, lp.top_ids[k])}};
    entry[std::to_string(lp.token_id)] = {{"logprob", lp.logprob},
                                          {"rank", lp.rank},
                                          {"decoded_token", prompt_text(out, i + 1, lp.token_id)}};
    list.push_back(std::move(entry));
  }
  return list;
}

json legacy_prompt_logprobs(const request_output& out, int32_t& text_offset) {
  if (out.prompt_token_texts.empty()) return json();
  json tokens = json::array(), token_logprobs = json::array(), tops = json::array(),
       offsets = json::array();
  for (std::size_t i = 0; i < out.prompt_token_texts.size(); ++i) {
    const std::string& text = out.prompt_token_texts[i];
    tokens.push_back(text);
    offsets.push_back(text_offset);
    text_offset += num_chars(text);
    if (i == 0 || i - 1 >= out.prompt_logprobs.size()) {
      token_logprobs.push_back(nullptr);
      tops.push_back(nullptr);
      continue;
    }
    const token_logprob& lp = out.prompt_logprobs[i - 1];
    json top = json::object();
    for (std::size_t k = 0; k < lp.top_ids.size() && k < lp.top_logprobs.size(); ++k)
      top[token_text(lp.top_texts, k, lp.top_ids[k])] = lp.top_logprobs[k];
    top[text] = lp.logprob;
    token_logprobs.push_back(lp.logprob);
    tops.push_back(std::move(top));
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

}  // namespace actorllm::api
