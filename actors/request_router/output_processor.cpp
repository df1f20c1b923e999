#include "actors/request_router/output_processor.hpp"

#include <algorithm>

namespace actorllm {

output_processor::output_processor(tokenizer tok, const generate_request& request,
                                   const std::vector<int32_t>& prompt_ids)
    : tok_(std::move(tok)),
      prompt_ids_(prompt_ids),
      skip_special_tokens_(request.params.skip_special_tokens),
      echo_(request.echo),
      want_token_texts_(request.params.logprobs >= 0),
      stops_(request.params.stop),
      include_stop_(request.params.include_stop_str_in_output),
      min_tokens_(request.params.min_tokens),
      num_choices_(std::max(1, request.params.n)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
  if (echo_) {
    echo_text_ = request.kind == prompt_kind::text ? request.text
                                                   : tok_.decode(prompt_ids_, skip_special_tokens_);
  }
  choices_.reserve(num_choices_);
  for (int32_t i = 0; i < num_choices_; ++i)
    choices_.push_back(
        {incremental_detokenizer(tok_, skip_special_tokens_, prompt_ids_), {}, 0, 0, false, false});
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

std::optional<request_output> output_processor::process(request_output out) {
  choice& c = choice_at(out.index);
  if (c.finished) return std::nullopt;
  // The scheduler stops a choice with finish stop only on EOS or a stop token, its last id.
  const bool skip_stop_token =
      out.finish == finish_reason::stop && !include_stop_ && !out.token_ids.empty();
  for (size_t i = 0; i < out.token_ids.size(); ++i) {
    const int32_t id = out.token_ids[i];
    ++c.num_tokens;
    if (!(skip_stop_token && i + 1 == out.token_ids.size())) c.held += c.detok.push(id);
    if (c.num_tokens <= min_tokens_) c.num_unsearchable = c.held.size();
    if (want_token_texts_) out.token_texts.push_back(token_text(id));
  }
  if (want_token_texts_) {
    for (auto& lp : out.logprobs) {
      lp.top_texts.clear();
      for (int32_t id : lp.top_ids) lp.top_texts.push_back(token_text(id));
    }
  }
  const bool ending = out.finish != finish_reason::none;
  if (ending) c.held += c.detok.finish();

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
