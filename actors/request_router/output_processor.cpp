#include "actors/request_router/output_processor.hpp"

#include <algorithm>

namespace actorllm {
namespace {

// Ids of context before a token whose logprob text is decoded (vLLM keeps about as many):
// enough for a leading space and for a character split over byte pieces.
constexpr size_t token_text_context = 6;

bool is_byte_piece(const std::string& piece) {
  return piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>';
}

bool ends_with_replacement(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

void push_context(std::vector<int32_t>& context, int32_t id) {
  context.push_back(id);
  if (context.size() > token_text_context)
    context.erase(context.begin(), context.end() - token_text_context);
}

}  // namespace

output_processor::output_processor(tokenizer tok, const generate_request& request,
                                   const std::vector<int32_t>& prompt_ids)
    : tok_(std::move(tok)),
      prompt_ids_(prompt_ids),
      skip_special_tokens_(request.params.skip_special_tokens),
      echo_(request.echo),
      echo_without_generation_(request.echo_without_generation),
      want_token_texts_(request.params.logprobs >= 0),
      want_prompt_texts_(request.params.prompt_logprobs >= 0),
      stops_(request.params.stop),
      include_stop_(request.params.include_stop_str_in_output),
      min_tokens_(request.params.min_tokens),
      num_choices_(std::max(1, request.params.n)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
  if (echo_) {
    echo_text_ = request.kind == prompt_kind::text ? request.text
                                                   : tok_.decode(prompt_ids_, skip_special_tokens_);
  }
  choice fresh{incremental_detokenizer(tok_, skip_special_tokens_, prompt_ids_),
               {},
               0,
               0,
               {},
               false,
               false,
               false};
  for (int32_t id : prompt_ids_) push_context(fresh.context, id);
  choices_.assign(static_cast<size_t>(num_choices_), fresh);
}

void output_processor::append_token_texts(const std::vector<int32_t>& context,
                                          std::span<const int32_t> ids,
                                          std::vector<std::string>& texts) const {
  const std::string before = tok_.decode(context, skip_special_tokens_);
  std::vector<int32_t> with = context;
  with.push_back(0);
  for (int32_t id : ids) {
    if (tok_.is_special(id)) {
      texts.push_back(tok_.decode(std::span(&id, 1), false));
      continue;
    }
    with.back() = id;
    const std::string after = tok_.decode(with, skip_special_tokens_);
    if (ends_with_replacement(after) && is_byte_piece(tok_.id_to_piece(id))) {
      texts.emplace_back();
      continue;
    }
    // `before` is a prefix of `after` except where a decoder looks ahead (a character that
    // this byte piece completes): then the text runs from the first difference.
    const size_t common =
        std::mismatch(before.begin(), before.end(), after.begin(), after.end()).first -
        before.begin();
    texts.push_back(after.substr(common));
  }
}

output_processor::choice& output_processor::choice_at(int32_t index) {
  return choices_.at(static_cast<size_t>(std::clamp(index, 0, num_choices_ - 1)));
}

std::optional<std::string> output_processor::release_text(choice& c, std::string& out,
                                                          bool final_delta) const {
  // The earliest complete match of any stop string that ends past the unsearchable text
  // ends the choice.
  size_t best = std::string::npos;
  const std::string* matched = nullptr;
  for (const auto& stop : stops_) {
    const size_t from =
        c.num_unsearchable >= stop.size() ? c.num_unsearchable - stop.size() + 1 : 0;
    const size_t at = c.held.find(stop, from);
    if (at != std::string::npos && at < best) best = at, matched = &stop;
  }
  if (matched) {
    out += c.held.substr(0, include_stop_ ? best + matched->size() : best);
    c.held.clear();
    return *matched;
  }
  size_t keep = 0;  // longest suffix of held that begins some stop string
  if (!final_delta) {
    for (const auto& stop : stops_)
      for (size_t len = std::min(stop.size() - 1, c.held.size()); len > keep; --len)
        if (c.held.compare(c.held.size() - len, len, stop, 0, len) == 0) {
          keep = len;
          break;
        }
  }
  const size_t released = c.held.size() - keep;
  out += c.held.substr(0, released);
  c.held.erase(0, released);
  c.num_unsearchable -= std::min(c.num_unsearchable, released);
  return std::nullopt;
}

void output_processor::add_prompt_texts(request_output& out) const {
  // Entry i scores prompt token i + 1, in the context of the tokens before it.
  std::vector<int32_t> context;
  for (size_t j = 0; j < prompt_ids_.size(); ++j) {
    const int32_t id = prompt_ids_[j];
    append_token_texts(context, std::span(&id, 1), out.prompt_token_texts);
    if (j >= 1 && j - 1 < out.prompt_logprobs.size()) {
      token_logprob& lp = out.prompt_logprobs[j - 1];
      lp.top_texts.clear();
      append_token_texts(context, lp.top_ids, lp.top_texts);
    }
    push_context(context, id);
  }
}

std::optional<request_output> output_processor::process(request_output out) {
  choice& c = choice_at(out.index);
  if (c.finished) return std::nullopt;
  if (want_prompt_texts_ && !c.prompt_texts_sent) {  // the delta with the prompt logprobs
    add_prompt_texts(out);
    c.prompt_texts_sent = true;
  }
  // The scheduler stops a choice with finish stop only on EOS or a stop token, its last id.
  const bool skip_stop_token =
      out.finish == finish_reason::stop && !include_stop_ && !out.token_ids.empty();
  for (size_t i = 0; i < out.token_ids.size(); ++i) {
    const int32_t id = out.token_ids[i];
    ++c.num_tokens;
    if (!(skip_stop_token && i + 1 == out.token_ids.size())) c.held += c.detok.push(id);
    if (c.num_tokens <= min_tokens_) c.num_unsearchable = c.held.size();
    if (!want_token_texts_) continue;
    // logprobs[i] belongs to the position of token_ids[i].
    append_token_texts(c.context, std::span(&id, 1), out.token_texts);
    if (i < out.logprobs.size()) {
      token_logprob& lp = out.logprobs[i];
      lp.top_texts.clear();
      append_token_texts(c.context, lp.top_ids, lp.top_texts);
    }
    push_context(c.context, id);
  }
  const bool ending = out.finish != finish_reason::none;
  if (ending) c.held += c.detok.finish();
  if (echo_without_generation_) {
    // The one token computed after the prompt is not the caller's: only the prompt is.
    c.held.clear();
    out.token_ids.clear();
    out.token_texts.clear();
    out.logprobs.clear();
    out.num_generated_tokens = 0;
  }

  out.text.clear();
  if (echo_ && !c.echoed) {
    out.text = echo_text_;
    c.echoed = true;
  }
  if (auto stop = release_text(c, out.text, ending)) {
    out.finish = finish_reason::stop;
    out.stop_reason = *stop;
    out.stop_token = -1;
  }
  if (out.finish != finish_reason::none) c.finished = true;
  return out;
}

bool output_processor::all_choices_finished() const {
  return std::all_of(choices_.begin(), choices_.end(), [](const choice& c) { return c.finished; });
}

}  // namespace actorllm
