#include "actors/request_router/prompt_builder.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/sampling_contract.hpp"
#include "grammar/grammar_error.hpp"

namespace actorllm {

namespace {

prepared_prompt refuse(std::string message, std::string param = {}, int32_t status = 400) {
  prepared_prompt p;
  p.error = std::move(message);
  p.error_param = std::move(param);
  p.status = status;
  return p;
}

}  // namespace

prompt_builder::prompt_builder(tokenizer tok, chat_renderer render_chat,
                               std::string served_model_name, int32_t max_model_len,
                               int32_t max_logprobs,
                               std::shared_ptr<grammar::grammar_compiler> grammars,
                               std::shared_ptr<const lora_registry> loras,
                               std::shared_ptr<const image_pipeline> images)
    : tok_(std::move(tok)),
      render_chat_(std::move(render_chat)),
      grammars_(std::move(grammars)),
      loras_(std::move(loras)),
      images_(std::move(images)),
      served_model_name_(std::move(served_model_name)),
      max_model_len_(max_model_len),
      max_logprobs_(max_logprobs) {
  size_t longest_piece = 1;
  for (size_t id = 0; id < tok_.vocab_size(); ++id)
    longest_piece = std::max(longest_piece, tok_.id_to_piece(static_cast<int32_t>(id)).size());
  max_prompt_bytes_ = int64_t{max_model_len_} * static_cast<int64_t>(4 * longest_piece + 16);
}

prepared_prompt prompt_builder::check_text_length(std::string_view text,
                                                  const sampling_params& params) const {
  // A truncated prompt may be of any length; the body limit bounds it.
  if (params.truncate_prompt_tokens != 0 || static_cast<int64_t>(text.size()) <= max_prompt_bytes_)
    return {};
  return refuse("This model's maximum context length is " + std::to_string(max_model_len_) +
                    " tokens. However, your prompt has " + std::to_string(text.size()) +
                    " bytes of text, more than that many tokens can hold. Please reduce the "
                    "length of the prompt.",
                "prompt");
}

prepared_prompt prompt_builder::validate_params(const sampling_params& p) const {
  // The bounds that hold on every server, as net/ checked them already for HTTP requests; the
  // offline engine's requests meet them here.
  if (auto broken = check_sampling(p)) return refuse(broken->message, broken->param);
  if (p.logprobs > max_logprobs_)
    return refuse("logprobs must be at most " + std::to_string(max_logprobs_) +
                      " (the server's --max-logprobs)",
                  "logprobs");
  if (p.prompt_logprobs > max_logprobs_)
    return refuse("prompt_logprobs must be at most " + std::to_string(max_logprobs_) +
                      " (the server's --max-logprobs)",
                  "prompt_logprobs");
  if (p.prompt_logprobs >= 0 && p.pooling != pooling_type::none)
    return refuse("prompt_logprobs is for generation; an embedding request has no logits",
                  "prompt_logprobs");
  const auto vocab = static_cast<int32_t>(tok_.vocab_size());
  for (auto [id, bias] : p.logit_bias)
    if (id < 0 || id >= vocab)
      return refuse("logit_bias names token " + std::to_string(id) + ", outside the vocabulary",
                    "logit_bias");
  for (int32_t id : p.stop_token_ids)
    if (id < 0 || id >= vocab)
      return refuse("stop_token_ids names token " + std::to_string(id) + ", outside the vocabulary",
                    "stop_token_ids");
  if (p.structured.active()) return check_structured_output(p.structured);
  return {};
}

bool prompt_builder::needs_compile(const structured_output& spec) const {
  return spec.active() && grammars_ && !grammars_->contains(spec);
}

prepared_prompt prompt_builder::check_structured_output(const structured_output& spec) const {
  const std::string param = spec.field.empty() ? "structured_outputs" : spec.field;
  if (!grammars_) return refuse("this server was started without structured output", param);
  try {
    // Compiled now, and kept: the workers of this process find it in the compiler's cache.
    (void)grammars_->compile(spec);
  } catch (const grammar::grammar_error& e) {
    return refuse(std::string("invalid ") + constraint_name(spec.kind) +
                      " for structured output: " + e.what(),
                  param);
  }
  return {};
}

prepared_prompt prompt_builder::check_takes_images(const generate_request& r) const {
  if (r.image_urls.empty()) return {};
  if (!images_)
    return refuse("The model `" + served_model_name_ + "` takes no images; send text only",
                  "messages");
  // Before anything is fetched: images that cannot fit the context are not worth loading.
  const int64_t positions =
      static_cast<int64_t>(r.image_urls.size()) * images_->spec().tokens_per_image;
  if (positions >= max_model_len_)
    return refuse(std::to_string(r.image_urls.size()) + " images fill " +
                      std::to_string(positions) + " positions; this model's maximum context " +
                      "length is " + std::to_string(max_model_len_) + " tokens",
                  "messages");
  return {};
}

prepared_prompt prompt_builder::check_images(const generate_request& r,
                                             const std::vector<prompt_image>& images) const {
  if (auto refused = check_takes_images(r); !refused.ok()) return refused;
  if (images.size() != r.image_urls.size())
    return refuse("the request's images were not loaded", "messages", 500);
  if (r.params.truncate_prompt_tokens != 0)
    return refuse("truncate_prompt_tokens cannot cut a prompt with images",
                  "truncate_prompt_tokens");
  return {};
}

prepared_prompt prompt_builder::prepare(const generate_request& r,
                                        std::vector<prompt_image> images) const {
  std::shared_ptr<const lora_adapter> adapter;
  if (!r.model.empty() && r.model != served_model_name_) {
    adapter = loras_ ? loras_->find(r.model) : nullptr;
    if (!adapter) return refuse("The model `" + r.model + "` does not exist.", "model", 404);
  }
  if (auto bad = validate_params(r.params); !bad.ok()) return bad;

  prepared_prompt p;
  p.adapter = std::move(adapter);
  switch (r.kind) {
    case prompt_kind::token_ids: {
      const auto vocab = static_cast<int32_t>(tok_.vocab_size());
      for (int32_t id : r.token_ids)
        if (id < 0 || id >= vocab)
          return refuse("prompt token " + std::to_string(id) + " is outside the vocabulary (size " +
                            std::to_string(vocab) + ")",
                        "prompt");
      p.token_ids = r.token_ids;
      break;
    }
    case prompt_kind::text:
      if (auto too_long = check_text_length(r.text, r.params); !too_long.ok()) return too_long;
      p.token_ids = tok_.encode(r.text, r.add_special_tokens);
      break;
    case prompt_kind::chat:
      if (!render_chat_)
        return refuse("this model has no chat template; use /v1/completions", "messages");
      try {
        std::string text = render_chat_(r.chat_json, r.add_generation_prompt);
        if (!r.image_urls.empty()) {
          if (auto refused = check_images(r, images); !refused.ok()) return refused;
          std::string expanded;
          if (std::string fault = images_->expand(text, images, expanded); !fault.empty())
            return refuse(fault, "messages");
          text = std::move(expanded);
        }
        if (auto too_long = check_text_length(text, r.params); !too_long.ok()) return too_long;
        // The template writes BOS itself; tokenizing must not add another one.
        p.token_ids = tok_.encode(text, false);
      } catch (const std::exception& e) {
        return refuse(std::string("chat template failed: ") + e.what(), "messages");
      }
      break;
  }
  if (p.token_ids.empty()) return refuse("the prompt is empty", "prompt");
  if (!r.image_urls.empty()) {
    if (r.kind != prompt_kind::chat) return refuse("images come with chat messages", "messages");
    if (std::string fault = images_->place(p.token_ids, images); !fault.empty())
      return refuse(fault, "messages");
    p.images = std::move(images);
  }
  if (const int32_t keep = r.params.truncate_prompt_tokens; keep != 0) {
    const auto limit = static_cast<size_t>(keep < 0 ? max_model_len_ : keep);
    if (p.token_ids.size() > limit)
      p.token_ids.erase(p.token_ids.begin(), p.token_ids.end() - static_cast<ptrdiff_t>(limit));
  }
  const auto num_tokens = static_cast<int32_t>(p.token_ids.size());
  if (num_tokens >= max_model_len_)
    return refuse(
        "This model's maximum context length is " + std::to_string(max_model_len_) +
            " tokens. However, your prompt has " + std::to_string(num_tokens) +
            " tokens, leaving no room for completion. Please reduce the length of the prompt.",
        "prompt");
  // As vLLM and OpenAI answer, rather than cutting the completion short without a word.
  const int32_t max_tokens = r.params.max_tokens;  // -1: until the context is full
  if (max_tokens > 0 && int64_t{num_tokens} + max_tokens > max_model_len_) {
    const std::string limit = std::to_string(max_model_len_), asked = std::to_string(max_tokens),
                      prompt = std::to_string(num_tokens);
    return refuse("'max_tokens' is too large: " + asked +
                      ". This model's maximum context length is " + limit +
                      " tokens and your request has " + prompt + " input tokens (" + asked + " > " +
                      limit + " - " + prompt + ").",
                  "max_tokens");
  }
  return p;
}

}  // namespace actorllm
