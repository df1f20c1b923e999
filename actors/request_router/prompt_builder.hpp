#pragma once
/// The router's request preparation (a core): validates the sampling parameters and the
/// model name, renders chat messages through the chat template, tokenizes, and checks the
/// prompt against max_model_len. Every refusal is a value with the HTTP status it maps to.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/request_router/image_pipeline.hpp"
#include "common/generate_request.hpp"
#include "common/prompt_image.hpp"
#include "grammar/grammar_compiler.hpp"
#include "model/lora_registry.hpp"
#include "tokenizer/tokenizer.hpp"

namespace actorllm {

struct prepared_prompt {
  std::vector<int32_t> token_ids;
  std::string error;        ///< non-empty: refused, one line for the client
  std::string error_param;  ///< the offending parameter, when one is to blame
  int32_t status = 200;     ///< 400 bad request, 404 unknown model
  /// The LoRA adapter `model` named (null: the base model), held while the request lives.
  std::shared_ptr<const lora_adapter> adapter;
  /// The prompt's images at their positions (token_ids holds their key tokens there).
  std::vector<prompt_image> images;
  bool ok() const { return error.empty(); }
};

/// Renders {"messages": [...], "tools": ...} (chat_json) with add_generation_prompt into the
/// prompt text; throws std::runtime_error with a clear message when the template fails.
using chat_renderer =
    std::function<std::string(const std::string& chat_json, bool add_generation_prompt)>;

class prompt_builder {
 public:
  /// `max_logprobs`: the most logprobs / top_logprobs a request may ask (vLLM's
  /// --max-logprobs). `grammars` compiles a request's structured output, so that a schema,
  /// regex or grammar that does not compile is a 400 here (null: such requests are refused).
  /// `loras`: the adapters `model` may name besides the served model (null: none).
  /// `images`: a vision-language model's image side (null: the model takes no images).
  prompt_builder(tokenizer tok, chat_renderer render_chat, std::string served_model_name,
                 int32_t max_model_len, int32_t max_logprobs = 20,
                 std::shared_ptr<grammar::grammar_compiler> grammars = nullptr,
                 std::shared_ptr<const lora_registry> loras = nullptr,
                 std::shared_ptr<const image_pipeline> images = nullptr);

  /// `images`: request.image_urls loaded (image_pipeline::load), in order; their
  /// placeholders are expanded and the images placed.
  prepared_prompt prepare(const generate_request& request,
                          std::vector<prompt_image> images = {}) const;
  /// The image side; null for a model that takes no images.
  const image_pipeline* images() const { return images_.get(); }
  /// The refusal of a request with images for a model that takes none, or with more images
  /// than the context holds (ok otherwise); what the router checks before loading them.
  prepared_prompt check_takes_images(const generate_request& request) const;
  /// check_takes_images, then that `images` are the request's, for a prompt they may fill.
  prepared_prompt check_images(const generate_request& request,
                               const std::vector<prompt_image>& images) const;
  /// The parameter check alone (also used by the tokenizer endpoints' callers).
  prepared_prompt validate_params(const sampling_params& params) const;

  const tokenizer& tok() const { return tok_; }
  int32_t max_model_len() const { return max_model_len_; }

  /// Whether `spec` names a grammar not compiled yet (a compile may take up to the grammar
  /// budget: the router runs it off its own thread, then prepare finds it compiled).
  bool needs_compile(const structured_output& spec) const;
  /// Compiles `spec`'s grammar and keeps it for the workers: its refusal (an error with the
  /// parameter it names), or ok. Thread-safe.
  prepared_prompt check_structured_output(const structured_output& spec) const;

 private:
  tokenizer tok_;
  chat_renderer render_chat_;
  std::shared_ptr<grammar::grammar_compiler> grammars_;
  std::shared_ptr<const lora_registry> loras_;
  std::shared_ptr<const image_pipeline> images_;
  /// Refuses, without tokenizing, a text that cannot fit in max_model_len tokens whatever
  /// its tokens: tokenizing 15 MB of text costs a second of CPU for a certain 400.
  prepared_prompt check_text_length(std::string_view text, const sampling_params& params) const;

  std::string served_model_name_;
  int32_t max_model_len_;
  int32_t max_logprobs_;
  /// Bytes of text that max_model_len tokens can cover at most: every token covers at most
  /// its longest vocabulary piece's bytes (x4 for normalizations that shrink text, like NFC).
  int64_t max_prompt_bytes_ = 0;
};

}  // namespace actorllm
