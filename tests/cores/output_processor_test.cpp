// The router's post-processing on the real stories260K tokenizer. Most tests feed one
// single-character token per step (the vocabulary has a piece for every letter, and '▁' for a
// space), so each step adds one known character and the expected deltas can be written down.
// The prompt "<s>▁The" gives the detokenizer context, so the first letter keeps its place.
#include "actors/request_router/output_processor.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/stories_tokenizer.hpp"
#include "tests/support/test_data.hpp"

namespace actorllm {
namespace {

const std::vector<int32_t> prompt = {1, 291};  // "<s>", "▁The"
constexpr int32_t eos = 2;                     // "</s>"

int32_t piece(std::string_view name) {
  const auto id = testing::stories_tokenizer().piece_to_id(name);
  EXPECT_TRUE(id) << "no piece " << name;
  return id.value_or(0);
}

/// One id per character of `text`.
std::vector<int32_t> letters(std::string_view text) {
  std::vector<int32_t> ids;
  for (char c : text) ids.push_back(piece(c == ' ' ? "\u2581" : std::string(1, c)));
  return ids;
}

generate_request request_with(std::vector<std::string> stops, bool include_stop = false) {
  generate_request r;
  r.kind = prompt_kind::token_ids;
  r.token_ids = prompt;
  r.params.stop = std::move(stops);
  r.params.include_stop_str_in_output = include_stop;
  return r;
}

/// What the scheduler sends for one step: new ids, and the finish it decided.
request_output step(std::vector<int32_t> ids, finish_reason finish = finish_reason::none,
                    int32_t index = 0) {
  request_output out;
  out.index = index;
  out.token_ids = std::move(ids);
  out.finish = finish;
  return out;
}

/// Feeds `ids` one per step; the last step carries `last_finish`.
std::vector<std::optional<request_output>> feed(output_processor& p,
                                                const std::vector<int32_t>& ids,
                                                finish_reason last_finish = finish_reason::none) {
  std::vector<std::optional<request_output>> deltas;
  for (size_t i = 0; i < ids.size(); ++i)
    deltas.push_back(
        p.process(step({ids[i]}, i + 1 == ids.size() ? last_finish : finish_reason::none)));
  return deltas;
}

/// The text of each delta; "<none>" where the processor returned nothing.
std::vector<std::string> texts(const std::vector<std::optional<request_output>>& deltas) {
  std::vector<std::string> t;
  for (const auto& d : deltas) t.push_back(d ? d->text : "<none>");
  return t;
}

using strings = std::vector<std::string>;

TEST(output_processor, without_stop_strings_each_token_text_goes_out_at_once) {
  output_processor p(testing::stories_tokenizer(), request_with({}), prompt);
  const auto deltas = feed(p, letters("a cat"), finish_reason::length);
  EXPECT_EQ(texts(deltas), (strings{"a", " ", "c", "a", "t"}));
  EXPECT_EQ(deltas.back()->finish, finish_reason::length);
  EXPECT_EQ(deltas.back()->stop_reason, "");
  EXPECT_TRUE(p.all_choices_finished());
}

TEST(output_processor, empty_stop_strings_are_ignored) {
  output_processor p(testing::stories_tokenizer(), request_with({""}), prompt);
  const auto deltas = feed(p, letters("ab"));
  EXPECT_EQ(texts(deltas), (strings{"a", "b"}));
  EXPECT_EQ(deltas.back()->finish, finish_reason::none);
  EXPECT_FALSE(p.all_choices_finished());
}

TEST(output_processor, text_that_may_begin_a_stop_string_is_held_until_it_cannot) {
  output_processor p(testing::stories_tokenizer(), request_with({"cat"}), prompt);
  // "c" and "ca" may still become "cat"; "car" cannot, so it goes out whole.
  const auto deltas = feed(p, letters("a car"));
  EXPECT_EQ(texts(deltas), (strings{"a", " ", "", "", "car"}));
  for (const auto& d : deltas) EXPECT_EQ(d->finish, finish_reason::none);
  EXPECT_FALSE(p.all_choices_finished());
}

TEST(output_processor, only_the_part_that_can_no_longer_match_is_released) {
  output_processor p(testing::stories_tokenizer(), request_with({"aab"}), prompt);
  // "aaa": the first "a" cannot begin "aab" any more (the stop would start at the second),
  // so it goes out and "aa" stays held; "b" completes the stop string after it.
  const auto deltas = feed(p, letters("aaab"));
  EXPECT_EQ(texts(deltas), (strings{"", "", "a", ""}));
  EXPECT_EQ(deltas.back()->finish, finish_reason::stop);
  EXPECT_EQ(deltas.back()->stop_reason, "aab");
}

TEST(output_processor, a_stop_string_over_several_tokens_cuts_the_text_before_it) {
  output_processor p(testing::stories_tokenizer(), request_with({"cat"}), prompt);
  const auto deltas = feed(p, letters("a cat sat"));
  EXPECT_EQ(texts(deltas), (strings{"a", " ", "", "", "", "<none>", "<none>", "<none>", "<none>"}));
  const auto& last = *deltas[4];
  EXPECT_EQ(last.finish, finish_reason::stop);
  EXPECT_EQ(last.stop_reason, "cat");
  EXPECT_EQ(last.token_ids, letters("t"));  // the ids of the step go out with it
  EXPECT_TRUE(p.all_choices_finished());
}

TEST(output_processor, include_stop_str_in_output_keeps_the_matched_string) {
  output_processor p(testing::stories_tokenizer(), request_with({"cat"}, true), prompt);
  const auto deltas = feed(p, letters("a cat sat"));
  std::string text;
  for (const auto& d : deltas)
    if (d) text += d->text;
  EXPECT_EQ(text, "a cat");
  ASSERT_TRUE(deltas[4]);
  EXPECT_EQ(deltas[4]->finish, finish_reason::stop);
  EXPECT_EQ(deltas[4]->stop_reason, "cat");
  EXPECT_FALSE(deltas[5]);
}

TEST(output_processor, the_earliest_match_wins_and_text_after_it_is_dropped) {
  // "▁said" decodes to " said" after the prompt; "a" begins before "id" although listed last.
  const std::vector<int32_t> said = {piece("\u2581said")};
  {
    output_processor p(testing::stories_tokenizer(), request_with({"id", "a"}), prompt);
    const auto out = p.process(step(said));
    ASSERT_TRUE(out);
    EXPECT_EQ(out->text, " s");
    EXPECT_EQ(out->finish, finish_reason::stop);
    EXPECT_EQ(out->stop_reason, "a");
  }
  {
    output_processor p(testing::stories_tokenizer(), request_with({"id", "a"}, true), prompt);
    const auto out = p.process(step(said));
    ASSERT_TRUE(out);
    EXPECT_EQ(out->text, " sa");
    EXPECT_EQ(out->stop_reason, "a");
  }
}

TEST(output_processor, several_tokens_in_one_step_are_decoded_and_matched_together) {
  output_processor p(testing::stories_tokenizer(), request_with({"at"}), prompt);
  const auto out = p.process(step(letters("a cat sat")));
  ASSERT_TRUE(out);
  EXPECT_EQ(out->text, "a c");
  EXPECT_EQ(out->finish, finish_reason::stop);
  EXPECT_EQ(out->stop_reason, "at");
}

TEST(output_processor, the_last_delta_releases_held_text_and_keeps_its_finish) {
  output_processor p(testing::stories_tokenizer(), request_with({"cat"}), prompt);
  const auto deltas = feed(p, letters("a ca"), finish_reason::length);
  EXPECT_EQ(texts(deltas), (strings{"a", " ", "", "ca"}));
  EXPECT_EQ(deltas.back()->finish, finish_reason::length);
  EXPECT_EQ(deltas.back()->stop_reason, "");
  EXPECT_TRUE(p.all_choices_finished());
}

TEST(output_processor, a_stop_string_completed_by_the_last_token_turns_length_into_stop) {
  output_processor p(testing::stories_tokenizer(), request_with({"cat"}), prompt);
  const auto deltas = feed(p, letters("a cat"), finish_reason::length);
  EXPECT_EQ(texts(deltas), (strings{"a", " ", "", "", ""}));
  EXPECT_EQ(deltas.back()->finish, finish_reason::stop);
  EXPECT_EQ(deltas.back()->stop_reason, "cat");
}

TEST(output_processor, eos_from_the_scheduler_flushes_held_text_and_adds_none) {
  output_processor p(testing::stories_tokenizer(), request_with({"cat"}), prompt);
  auto deltas = feed(p, letters("a c"));
  deltas.push_back(p.process(step({eos}, finish_reason::stop)));
  EXPECT_EQ(texts(deltas), (strings{"a", " ", "", "c"}));
  EXPECT_EQ(deltas.back()->finish, finish_reason::stop);
  EXPECT_EQ(deltas.back()->stop_reason, "");
  EXPECT_TRUE(p.all_choices_finished());
}

TEST(output_processor, a_stop_token_finish_keeps_the_schedulers_stop_reason) {
  // stop_token_ids are matched by the scheduler; its reason (the id) passes through.
  generate_request r = request_with({"cat"});
  r.params.stop_token_ids = {piece(".")};
  output_processor p(testing::stories_tokenizer(), r, prompt);
  request_output last = step({piece(".")}, finish_reason::stop);
  last.stop_token = piece(".");
  const auto out = p.process(last);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->finish, finish_reason::stop);
  EXPECT_EQ(out->stop_token, 426);
  EXPECT_EQ(out->stop_reason, "");
  EXPECT_TRUE(p.all_choices_finished());
  EXPECT_FALSE(p.process(step(letters("a"))));
}

// vLLM leaves the text of the token that stop-terminated a choice (EOS or one of
// stop_token_ids) out of the output unless include_stop_str_in_output is set
// (vllm/v1/engine/detokenizer.py, BaseIncrementalDetokenizer.update). Here "." is added.
TEST(output_processor, the_text_of_a_stop_token_is_left_out_as_in_vllm) {
  generate_request r = request_with({});
  r.params.stop_token_ids = {piece(".")};
  {
    output_processor p(testing::stories_tokenizer(), r, prompt);
    auto deltas = feed(p, letters("ab"));
    deltas.push_back(p.process(step({piece(".")}, finish_reason::stop)));
    EXPECT_EQ(texts(deltas), (strings{"a", "b", ""}));
  }
  r.params.include_stop_str_in_output = true;
  {
    output_processor p(testing::stories_tokenizer(), r, prompt);
    auto deltas = feed(p, letters("ab"));
    deltas.push_back(p.process(step({piece(".")}, finish_reason::stop)));
    EXPECT_EQ(texts(deltas), (strings{"a", "b", "."}));
  }
}

// The same for EOS where special tokens are kept in the text: "</s>" is not added.
TEST(output_processor, the_text_of_eos_is_left_out_when_special_tokens_are_kept) {
  generate_request r = request_with({});
  r.params.skip_special_tokens = false;
  {
    output_processor p(testing::stories_tokenizer(), r, prompt);
    auto deltas = feed(p, letters("ab"));
    deltas.push_back(p.process(step({eos}, finish_reason::stop)));
    EXPECT_EQ(texts(deltas), (strings{"a", "b", ""}));
    EXPECT_EQ(deltas.back()->token_ids, std::vector<int32_t>{eos});  // the id still goes out
  }
  r.params.include_stop_str_in_output = true;
  {
    output_processor p(testing::stories_tokenizer(), r, prompt);
    auto deltas = feed(p, letters("ab"));
    deltas.push_back(p.process(step({eos}, finish_reason::stop)));
    EXPECT_EQ(texts(deltas), (strings{"a", "b", "</s>"}));
  }
}

// vLLM matches stop strings only once more than min_tokens tokens were generated
// (vllm PR 22014; tests/detokenizer/test_min_tokens.py), as min_tokens already holds off
// EOS and stop ids in the scheduler. Here a stop string ends the choice before min_tokens.
TEST(output_processor, stop_strings_do_not_count_before_min_tokens) {
  generate_request r = request_with({"a"});
  r.params.min_tokens = 3;
  output_processor p(testing::stories_tokenizer(), r, prompt);
  // Tokens 1-3 ("a", "b", "a") come before min_tokens is reached; the 5th ("a") stops.
  const auto deltas = feed(p, letters("abaca"));
  std::string text;
  for (const auto& d : deltas)
    if (d) text += d->text;
  EXPECT_EQ(text, "abac");
  ASSERT_TRUE(deltas.back());
  EXPECT_EQ(deltas.back()->finish, finish_reason::stop);
  EXPECT_EQ(deltas.back()->stop_reason, "a");
}

TEST(output_processor, text_held_back_within_min_tokens_does_not_match_later) {
  // "ab" (tokens 1-2, within min_tokens) is held as a possible start of "abc"; the "x" that
  // follows must not complete the "ab" already there. A match must end past min_tokens.
  generate_request r = request_with({"ab", "abc"});
  r.params.min_tokens = 2;
  output_processor p(testing::stories_tokenizer(), r, prompt);
  const auto deltas = feed(p, letters("abx"));
  EXPECT_EQ(texts(deltas), (strings{"", "", "abx"}));
  EXPECT_EQ(deltas.back()->finish, finish_reason::none);
  // A stop string that begins within min_tokens and ends past it counts, as in vLLM.
  output_processor q(testing::stories_tokenizer(), r, prompt);
  const auto stopped = feed(q, letters("xab"));
  EXPECT_EQ(texts(stopped), (strings{"x", "", ""}));
  EXPECT_EQ(stopped.back()->finish, finish_reason::stop);
  EXPECT_EQ(stopped.back()->stop_reason, "ab");
}

TEST(output_processor, logprob_token_texts_are_what_each_token_adds_after_the_ones_before) {
  generate_request r = request_with({});
  r.params.logprobs = 2;
  r.params.skip_special_tokens = true;
  output_processor p(testing::stories_tokenizer(), r, prompt);
  request_output s = step({piece("\u2581t"), piece("a")});
  token_logprob first;
  first.token_id = piece("\u2581t");
  first.top_ids = {piece("\u2581t"), eos, piece("<0x0A>"), piece("\u2581said")};
  first.top_texts = {"stale"};
  token_logprob second;
  second.token_id = piece("a");
  second.top_ids = {piece("a"), piece("\u2581t")};
  s.logprobs = {first, second};
  const auto out = p.process(s);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->text, " ta");
  // After "The", "▁t" keeps its space (alone it would decode to "t"), as in vLLM; the chosen
  // tokens' texts add up to the text; special tokens are named although the text skips them.
  EXPECT_EQ(out->token_texts, (strings{" t", "a"}));
  ASSERT_EQ(out->logprobs.size(), 2u);
  EXPECT_EQ(out->logprobs[0].top_texts, (strings{" t", "</s>", "\n", " said"}));
  EXPECT_EQ(out->logprobs[1].top_texts, (strings{"a", " t"}));
  // The context carries over to the next step.
  request_output next = step({piece("\u2581t")});
  token_logprob third;
  third.token_id = piece("\u2581t");
  third.top_ids = {piece("\u2581t")};
  next.logprobs = {third};
  const auto later = p.process(next);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->token_texts, (strings{" t"}));
  EXPECT_EQ(later->logprobs[0].top_texts, (strings{" t"}));
}

TEST(output_processor, a_character_over_byte_pieces_is_the_text_of_its_last_piece) {
  // "é" is <0xC3><0xA9> in byte-fallback pieces: the first adds nothing yet.
  generate_request r = request_with({});
  r.params.logprobs = 0;
  output_processor p(testing::stories_tokenizer(), r, prompt);
  const auto out = p.process(step({piece("<0xC3>"), piece("<0xA9>"), piece("a")}));
  ASSERT_TRUE(out);
  EXPECT_EQ(out->text, "\u00e9a");
  EXPECT_EQ(out->token_texts, (strings{"", "\u00e9", "a"}));
}

TEST(output_processor, without_logprobs_no_token_texts_are_filled) {
  output_processor p(testing::stories_tokenizer(), request_with({}), prompt);
  const auto out = p.process(step(letters("ab")));
  ASSERT_TRUE(out);
  EXPECT_EQ(out->text, "ab");
  EXPECT_TRUE(out->token_texts.empty());
}

TEST(output_processor, choices_hold_and_stop_apart) {
  generate_request r = request_with({"cat"});
  r.params.n = 2;
  output_processor p(testing::stories_tokenizer(), r, prompt);
  auto on = [&](int32_t index, std::string_view text) {
    return p.process(step(letters(text), finish_reason::none, index));
  };
  EXPECT_EQ(on(0, "c")->text, "");
  EXPECT_EQ(on(1, "c")->text, "");
  EXPECT_EQ(on(1, "x")->text, "cx");
  const auto zero = on(0, "at");
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->index, 0);
  EXPECT_EQ(zero->text, "");
  EXPECT_EQ(zero->finish, finish_reason::stop);
  EXPECT_FALSE(p.all_choices_finished());
  EXPECT_FALSE(on(0, "a"));
  const auto one = p.process(step(letters("y"), finish_reason::length, 1));
  ASSERT_TRUE(one);
  EXPECT_EQ(one->text, "y");
  EXPECT_EQ(one->finish, finish_reason::length);
  EXPECT_TRUE(p.all_choices_finished());
}

TEST(output_processor, echo_prepends_the_text_prompt_once) {
  generate_request r = request_with({});
  r.kind = prompt_kind::text;
  r.text = "Once upon";
  r.echo = true;
  output_processor p(testing::stories_tokenizer(), r, prompt);
  const auto deltas = feed(p, letters("ab"));
  EXPECT_EQ(texts(deltas), (strings{"Once upona", "b"}));
}

TEST(output_processor, echo_of_a_token_prompt_is_its_decoded_text_and_is_not_searched) {
  // The stop string "Th" lies in the echoed prompt only: the output is what is searched.
  generate_request r = request_with({"Th"});
  r.echo = true;
  output_processor p(testing::stories_tokenizer(), r, prompt);
  const auto deltas = feed(p, letters("aT"), finish_reason::length);
  EXPECT_EQ(texts(deltas), (strings{"Thea", "T"}));
  EXPECT_EQ(deltas.back()->finish, finish_reason::length);
}

}  // namespace
}  // namespace actorllm
