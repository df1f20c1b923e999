#pragma once
/// The router's post-processing of one request (a core: no CAF): turns the scheduler's new
/// token ids into client text deltas with incremental detokenization, applies stop strings
/// (the text is cut before the match, as OpenAI does, or after it with vLLM's
/// include_stop_str_in_output; text that may begin a stop string is
/// held back until it is decided), fills the logprob token texts, and prepends the prompt
/// for `echo`. As in vLLM (vllm/v1/engine/detokenizer.py), the token that stop-terminated a
/// choice in the scheduler (EOS or one of stop_token_ids) adds no text unless
/// include_stop_str_in_output, and a stop string counts only where it ends in the text of a
/// token past the first min_tokens.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/generate_request.hpp"
#include "tokenizer/incremental_detokenizer.hpp"
#include "tokenizer/tokenizer.hpp"

namespace actorllm {

class output_processor {
 public:
  output_processor(tokenizer tok, const generate_request& request,
                   const std::vector<int32_t>& prompt_ids);

  /// Processes one scheduler output; returns the delta for the client, or nothing when a
  /// choice already ended (a stop string matched earlier).
  std::optional<request_output> process(request_output from_scheduler);

  /// True once a stop string ended every choice: the caller should abort the request in the
  /// scheduler so that its blocks are freed now rather than at max_tokens.
  bool all_choices_finished() const;

 private:
  struct choice {
    incremental_detokenizer detok;
    std::string held;  ///< decoded text not sent yet (a possible stop-string prefix)
    /// Leading bytes of `held` decoded from the first min_tokens tokens: a stop string that
    /// ends within them does not count.
    size_t num_unsearchable = 0;
    int32_t num_tokens = 0;        ///< generated tokens seen
    std::vector<int32_t> context;  ///< the last ids before the next token (logprob texts)
    bool finished = false;
    bool echoed = false;
    bool prompt_texts_sent = false;
  };
  choice& choice_at(int32_t index);
  /// Appends the logprob text of each of `ids` as the token after `context`: the text it adds
  /// to the tokens before it, as vLLM decodes them (so SentencePiece's '▁' keeps its space,
  /// and the texts of the chosen tokens add up to the output text). Special tokens are named
  /// even where the text skips them; a byte piece that leaves its character incomplete adds
  /// "" and the piece that completes it the whole character.
  void append_token_texts(const std::vector<int32_t>& context, std::span<const int32_t> ids,
                          std::vector<std::string>& texts) const;
  /// The texts of the prompt's tokens and of their logprobs' alternatives, into the delta that
  /// carries the prompt logprobs (request_output::prompt_token_texts, top_texts).
  void add_prompt_texts(request_output& out) const;
  /// Moves the decidable part of `held` into `out`; returns the matched stop string, if any.
  std::optional<std::string> release_text(choice& c, std::string& out, bool final_delta) const;

  tokenizer tok_;
  std::vector<int32_t> prompt_ids_;
  bool skip_special_tokens_;
  bool echo_;
  bool echo_without_generation_;
  bool want_token_texts_;
  bool want_prompt_texts_;
  std::string echo_text_;
  std::vector<std::string> stops_;
  bool include_stop_;  ///< a matched stop string (or stop token) is kept in the text
  int32_t min_tokens_;
  std::vector<choice> choices_;
  int32_t num_choices_;
};

}  // namespace actorllm
