#pragma once
/// Per-request sampling and stopping parameters, shared by the router (validation), the
/// scheduler (stopping rules) and the worker's sampler. Plain data; the OpenAI mapping in
/// net/ fills it, the router validates it.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/structured_output.hpp"

namespace actorllm {

/// An embedding request (pooling != none) computes its prompt and ends with one vector instead
/// of tokens: the final hidden state (after the model's last norm) of the last prompt token, or
/// the mean over every prompt token, L2-normalised unless `normalize` is off (vLLM's pooler).
enum class pooling_type : uint8_t { none, last, mean };

/// Beam search (vLLM's use_beam_search): n beams, each step every beam's 2 n most likely next
/// tokens (raw logprobs) are candidates and the n of highest summed logprob go on; a beam that
/// draws EOS (unless ignore_eos) is complete. The answer is the n best of the complete and the
/// running beams by summed logprob / length^length_penalty (length: prompt and output tokens).
struct beam_search_params {
  bool enabled = false;
  float length_penalty = 1.0f;
  /// Stop once n beams are complete (Hugging Face's early_stopping=True); otherwise run until
  /// max_tokens or until no beam runs, as vLLM does.
  bool early_stopping = false;
};

struct sampling_params {
  int32_t n = 1;                    ///< parallel samples per prompt (beam search: beams)
  float temperature = 1.0f;         ///< 0: greedy
  float top_p = 1.0f;               ///< nucleus mass in (0, 1]
  int32_t top_k = -1;               ///< -1 (or 0): no limit
  float min_p = 0.0f;               ///< drop tokens below min_p * p(max)
  float presence_penalty = 0.0f;    ///< OpenAI: -2..2, on tokens seen in the output
  float frequency_penalty = 0.0f;   ///< OpenAI: -2..2, times the count in the output
  float repetition_penalty = 1.0f;  ///< CTRL-style, on prompt and output tokens, > 0
  std::vector<std::pair<int32_t, float>> logit_bias;  ///< added to the logits before sampling
  std::optional<uint64_t> seed;                       ///< same seed, same output

  int32_t max_tokens = 16;  ///< generated tokens at most; -1: until the context is
                            ///< full (max_model_len - prompt tokens, set by the router)
  int32_t min_tokens = 0;   ///< EOS and stop ids are ignored before this many
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::string> stop;            ///< stop strings (matched by the router on text)
  bool include_stop_str_in_output = false;  ///< vLLM: a matched stop string stays in the text
  /// vLLM: keep only the prompt's last k tokens (0: all of them; -1: max_model_len).
  int32_t truncate_prompt_tokens = 0;

  int32_t logprobs = -1;  ///< -1: none; k >= 0: chosen token's logprob plus top k
  /// -1: none; k >= 0: each prompt token's logprob (but the first's) plus the top k, computed
  /// in the prefill (such a request does not read the prefix cache: its logits are needed).
  int32_t prompt_logprobs = -1;
  bool skip_special_tokens = true;
  int32_t priority = 0;                       ///< priority policy: lower runs first
  structured_output structured;               ///< what the output must match; none by default
  pooling_type pooling = pooling_type::none;  ///< an embedding request: no tokens, a vector
  beam_search_params beam;                    ///< off by default
  bool normalize = true;                      ///< the embedding has unit L2 norm
  /// The LoRA adapter that serves the request (the router sets it from `model`); 0: the base
  /// model. Its KV is cached apart from every other adapter's.
  int32_t lora_id = 0;

  bool greedy() const { return temperature <= 0.0f; }
};

}  // namespace actorllm
