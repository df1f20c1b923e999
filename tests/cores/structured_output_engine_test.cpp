// Structured output through the actor-free engine with the real stories260K model, whose
// free output is a children's story: every constrained answer must still be what was asked
// (a JSON value valid against its schema, a regex match, one of the choices), alone, sampled,
// with n = 3, under chunked prefill and preemption of both kinds, and the masks come off
// the critical path without changing a single token. A backend that takes the argmax where
// its logits are (as the CUDA one does, after its bitmask kernel) gets each row's mask
// through try_forward_greedy and picks what the host sampler picks.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "actors/gpu_worker/cpu_backend.hpp"
#include "actors/offline_engine/llm_engine.hpp"
#include "grammar/token_mask.hpp"
#include "tests/support/engine_checks.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

using nlohmann::json;
using testing::ids_request;

/// name (string <= 12 characters), age (integer 0..120), tags (up to 3 of a, b, c), ok (bool):
/// all required, nothing else.
constexpr const char* person_schema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
    "ok": {"type": "boolean"}
  },
  "required": ["name", "age", "tags", "ok"],
  "additionalProperties": false
})";

/// The schema above checked by hand (the e2e test checks with python3-jsonschema).
::testing::AssertionResult is_person(const std::string& text) {
  const json v = json::parse(text, nullptr, false);
  if (v.is_discarded()) return ::testing::AssertionFailure() << "not JSON: " << text;
  auto fail = [&](const char* why) { return ::testing::AssertionFailure() << why << ": " << text; };
  if (!v.is_object() || v.size() != 4) return fail("not an object of four members");
  if (!v.contains("name") || !v["name"].is_string()) return fail("name");
  // maxLength counts code points; the byte count bounds them from above.
  if (v["name"].get<std::string>().size() > 4 * 12) return fail("name too long");
  if (!v.contains("age") || !v["age"].is_number_integer()) return fail("age");
  if (v["age"].get<int64_t>() < 0 || v["age"].get<int64_t>() > 120) return fail("age range");
  if (!v.contains("tags") || !v["tags"].is_array() || v["tags"].size() > 3) return fail("tags");
  for (const auto& t : v["tags"])
    if (!t.is_string() || !std::set<std::string>{"a", "b", "c"}.count(t.get<std::string>()))
      return fail("tag");
  if (!v.contains("ok") || !v["ok"].is_boolean()) return fail("ok");
  return ::testing::AssertionSuccess();
}

generate_request constrained(std::string id, output_constraint kind, std::string source,
                             int32_t max_tokens = 300) {
  auto r = ids_request(std::move(id), {1}, max_tokens);
  r.params.ignore_eos = false;  // the grammar's end is an EOS
  r.params.structured.kind = kind;
  r.params.structured.source = std::move(source);
  r.params.structured.field = "response_format";
  return r;
}

generate_request sampled(generate_request r, uint64_t seed) {
  r.params.temperature = 1.0f;
  r.params.seed = seed;
  return r;
}

/// `count` greedy requests with their own prompts, every other one held to person_schema (up
/// to 100 tokens, ending at the grammar's end), the others free for `max_tokens`.
std::vector<generate_request> half_constrained(int count, int max_tokens, const char* prefix) {
  std::vector<generate_request> requests = testing::varied_requests(count, max_tokens, 40, prefix);
  for (size_t i = 0; i < requests.size(); i += 2) {
    // Prompts of whole pieces (ids past stories260K's 256 byte tokens): a prompt that ends in
    // half a UTF-8 character would put a replacement character before the JSON.
    for (size_t j = 1; j < requests[i].token_ids.size(); ++j)
      requests[i].token_ids[j] = 259 + requests[i].token_ids[j] % 250;
    requests[i].params.ignore_eos = false;
    requests[i].params.max_tokens = 100;
    requests[i].params.structured.kind = output_constraint::json_schema;
    requests[i].params.structured.source = person_schema;
  }
  return requests;
}

engine_config config() {
  return testing::stories_config(256, 256);
}

TEST(structured_output_engine, free_output_is_a_story_and_constrained_output_is_valid_json) {
  llm_engine engine(engine_setup::load(config()));
  auto free = ids_request("free", {1}, 60);
  EXPECT_FALSE(is_person(run_to_completion(engine, {free})[0][0].text));

  for (uint64_t seed = 0; seed < 8; ++seed) {
    const auto r = sampled(constrained("p", output_constraint::json_schema, person_schema), seed);
    const auto out = run_to_completion(engine, {r});
    EXPECT_TRUE(is_person(out[0][0].text)) << "seed " << seed;
    EXPECT_EQ(out[0][0].finish, finish_reason::stop) << out[0][0].text;
  }
  auto greedy = constrained("g", output_constraint::json_schema, person_schema);
  greedy.params.structured.compact_whitespace = true;
  const std::string text = run_to_completion(engine, {greedy})[0][0].text;
  EXPECT_TRUE(is_person(text));
  // Strict: no whitespace between tokens, and the members in the schema's order.
  EXPECT_EQ(nlohmann::ordered_json::parse(text).dump(), text);
  EXPECT_EQ(text.rfind("{\"name\":", 0), 0u) << text;
  EXPECT_EQ(engine.stats().device.num_used, 0);
}

TEST(structured_output_engine, regex_choice_grammar_and_json_object) {
  llm_engine engine(engine_setup::load(config()));
  const std::regex pattern("[A-Z][a-z]{2,6} (is|was) [0-9]{1,3}");
  const std::vector<std::string> choices{"Lily", "Tom", "a big red dog"};
  for (uint64_t seed = 0; seed < 6; ++seed) {
    const auto regex = sampled(
        constrained("r", output_constraint::regex, "[A-Z][a-z]{2,6} (is|was) [0-9]{1,3}"), seed);
    const std::string text = run_to_completion(engine, {regex})[0][0].text;
    EXPECT_TRUE(std::regex_match(text, pattern)) << text;

    auto choice = sampled(constrained("c", output_constraint::choice, ""), seed);
    choice.params.structured.choices = choices;
    const std::string picked = run_to_completion(engine, {choice})[0][0].text;
    EXPECT_NE(std::find(choices.begin(), choices.end(), picked), choices.end()) << picked;

    const auto gbnf = sampled(constrained("b", output_constraint::grammar,
                                          R"g(root ::= "(" item ("," item){0,3} ")"
                                              item ::= [0-9]{1,3} | "x")g"),
                              seed);
    const std::string list = run_to_completion(engine, {gbnf})[0][0].text;
    EXPECT_TRUE(std::regex_match(list, std::regex(R"(\((\d{1,3}|x)(,(\d{1,3}|x)){0,3}\))")))
        << list;

    const auto object = sampled(constrained("o", output_constraint::json_object, "", 120), seed);
    const auto out = run_to_completion(engine, {object})[0][0];
    // A JSON object, or a prefix of one when max_tokens cut it (finish_reason length).
    if (out.finish == finish_reason::stop) {
      const json v = json::parse(out.text, nullptr, false);
      EXPECT_TRUE(!v.is_discarded() && v.is_object()) << out.text;
    } else {
      EXPECT_EQ(out.finish, finish_reason::length);
      EXPECT_EQ(out.text.front(), '{');
    }
  }
}

TEST(structured_output_engine, max_tokens_cuts_a_grammar_short_with_finish_reason_length) {
  llm_engine engine(engine_setup::load(config()));
  const auto r = constrained("short", output_constraint::json_schema, person_schema, 5);
  const auto out = run_to_completion(engine, {r})[0][0];
  EXPECT_EQ(out.finish, finish_reason::length);
  EXPECT_EQ(out.token_ids.size(), 5u);
  EXPECT_EQ(out.text.front(), '{');
}

TEST(structured_output_engine, n_samples_each_follow_their_own_matcher) {
  llm_engine engine(engine_setup::load(config()));
  auto r = sampled(constrained("n", output_constraint::json_schema, person_schema), 7);
  r.params.n = 3;
  const auto out = run_to_completion(engine, {r});
  ASSERT_EQ(out[0].size(), 3u);
  std::set<std::string> distinct;
  for (const auto& choice : out[0]) {
    EXPECT_TRUE(is_person(choice.text));
    distinct.insert(choice.text);
  }
  EXPECT_GT(distinct.size(), 1u) << "three samples, one answer";
}

TEST(structured_output_engine, chunked_prefill_and_preemption_change_no_token) {
  // Constrained and free requests mixed, each with its own prompt; greedy, so a run alone
  // and a run squeezed into a small pool must give the same tokens.
  const auto requests = half_constrained(12, 80, "m");
  const auto alone = testing::solo_tokens(config(), requests);
  for (auto mode : {preemption_mode::recompute, preemption_mode::swap}) {
    auto c = config();
    c.scheduler.max_num_batched_tokens = 7;  // chunked prefill
    c.scheduler.preemption = mode;
    c.cache.num_gpu_blocks_override = 20;
    c.model.max_model_len = 160;
    c.cache.block_size = 8;
    llm_engine engine(engine_setup::load(c));
    const auto out = run_to_completion(engine, requests);
    testing::expect_preempted_run_matches_alone(engine, out, alone, mode);
    for (size_t i = 0; i < requests.size(); i += 2)
      if (out[i][0].finish == finish_reason::stop) {
        EXPECT_TRUE(is_person(out[i][0].text));
      }
  }
}

/// The CPU backend with a device-style greedy shortcut: the masks it is handed are applied
/// to its own logits, then each row's argmax. Counts the masked rows it saw.
class argmax_where_the_logits_are : public cpu_backend {
 public:
  argmax_where_the_logits_are(std::shared_ptr<const llama_model> model,
                              const model_runner_config& config, std::shared_ptr<int64_t> masked)
      : cpu_backend(model, config),
        vocab_(model->config().vocab_size),
        masked_(std::move(masked)) {}

  bool try_forward_greedy(const forward_batch& batch, std::vector<int32_t>& tokens,
                          const std::function<const row_token_masks&()>& masks) override {
    forward(batch, logits_);
    const size_t rows = logits_.size() / static_cast<size_t>(vocab_);
    if (masks) {
      const row_token_masks& m = masks();
      for (size_t i = 0; i < m.rows.size(); ++i) {
        const auto row = static_cast<size_t>(m.rows.at(i));
        EXPECT_LT(row, rows);
        if (row >= rows) return true;
        grammar::apply_token_mask(
            std::span<float>(logits_.data() + row * vocab_, static_cast<size_t>(vocab_)),
            std::span<const uint32_t>(m.words).subspan(i * m.words_per_row, m.words_per_row));
        ++*masked_;
      }
    }
    tokens.clear();
    for (size_t r = 0; r < rows; ++r)
      tokens.push_back(argmax(std::span<const float>(logits_.data() + r * vocab_, vocab_)));
    return true;
  }

 private:
  int64_t vocab_;
  std::shared_ptr<int64_t> masked_;
  std::vector<float> logits_;
};

class argmax_where_the_logits_are_provider : public cpu_backend_provider {
 public:
  std::unique_ptr<forward_backend> make_backend(std::shared_ptr<const llama_model> model,
                                                const model_runner_config& config) const override {
    return std::make_unique<argmax_where_the_logits_are>(std::move(model), config, masked);
  }
  std::shared_ptr<int64_t> masked = std::make_shared<int64_t>(0);
};

TEST(structured_output_engine, a_device_greedy_backend_masks_each_constrained_row) {
  // Constrained and free greedy requests batched together, with chunked prefill: the rows
  // the backend masks must be the constrained ones, or the tokens differ from the host's.
  const auto requests = half_constrained(8, 40, "d");
  auto c = config();
  c.scheduler.max_num_batched_tokens = 37;
  std::vector<std::vector<int32_t>> on_host;
  {
    llm_engine engine(engine_setup::load(c));
    for (const auto& out : run_to_completion(engine, requests)) on_host.push_back(out[0].token_ids);
  }
  auto provider = std::make_shared<argmax_where_the_logits_are_provider>();
  llm_engine engine(engine_setup::load(c, provider));
  const auto out = run_to_completion(engine, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(out[i][0].token_ids, on_host[i]) << requests[i].request_id;
    if (i % 2 == 0 && out[i][0].finish == finish_reason::stop) {
      EXPECT_TRUE(is_person(out[i][0].text));
    }
  }
  EXPECT_GT(*provider->masked, 40) << "the constrained rows were masked on the backend";
  EXPECT_EQ(engine.stats().device.num_used, 0);
}

TEST(structured_output_engine, speculative_drafts_are_masked_at_each_verified_position) {
  // Greedy, alone and without speculation, against speculation by n-gram lookup and by a
  // draft model (the target itself, which drafts the free story the mask forbids), on the
  // host sampler and on a backend that masks and takes the argmax itself.
  const auto requests = half_constrained(8, 60, "s");
  auto c = config();
  c.scheduler.max_num_batched_tokens = 37;
  const auto alone = testing::solo_tokens(c, requests);
  const auto ngram = testing::ngram_speculation(4);
  const auto draft = testing::draft_speculation(testing::stories260k_dir().string(), 3);
  for (const auto& spec : {ngram, draft}) {
    for (bool on_device : {false, true}) {
      auto sc = c;
      sc.speculative = spec;
      auto provider = std::make_shared<argmax_where_the_logits_are_provider>();
      llm_engine engine(on_device ? engine_setup::load(sc, provider) : engine_setup::load(sc));
      const auto out = run_to_completion(engine, requests);
      for (size_t i = 0; i < requests.size(); ++i) {
        EXPECT_EQ(out[i][0].token_ids, alone[i]) << requests[i].request_id;
        if (i % 2 == 0 && out[i][0].finish == finish_reason::stop) {
          EXPECT_TRUE(is_person(out[i][0].text));
        }
      }
      EXPECT_GT(engine.stats().speculation.num_accepted_tokens, 0);
      EXPECT_EQ(engine.stats().device.num_used, 0);
    }
  }
  // Sampled: every draw, accepted draft or residual, stays inside the grammar.
  auto sc = c;
  sc.speculative = draft;
  llm_engine engine(engine_setup::load(sc));
  for (uint64_t seed = 0; seed < 6; ++seed) {
    const auto r = sampled(constrained("p", output_constraint::json_schema, person_schema), seed);
    const auto out = run_to_completion(engine, {r});
    EXPECT_TRUE(is_person(out[0][0].text)) << "seed " << seed;
  }
  EXPECT_GT(engine.stats().speculation.num_draft_tokens, 0);
  EXPECT_LT(engine.stats().speculation.num_accepted_tokens,
            engine.stats().speculation.num_draft_tokens);
}

TEST(structured_output_engine, what_does_not_compile_is_a_400_naming_the_field) {
  llm_engine engine(engine_setup::load(config()));
  const std::tuple<output_constraint, const char*, const char*> bad[] = {
      {output_constraint::json_schema, R"({"type": "object", "properties": )", "json"},
      {output_constraint::json_schema, R"({"type": "strange"})", "json"},
      {output_constraint::regex, "(unclosed", "regex"},
      {output_constraint::grammar, "root ::= missing_rule", "grammar"},
  };
  for (const auto& [kind, source, name] : bad) {
    auto r = constrained("bad", kind, source);
    r.params.structured.field = "guided_x";
    const auto refused = engine.add_request(r);
    ASSERT_TRUE(refused.has_value()) << source;
    EXPECT_EQ(refused->error_status, 400) << source;
    EXPECT_EQ(refused->error_param, "guided_x");
    EXPECT_NE(refused->error.find(name), std::string::npos) << refused->error;
  }
  EXPECT_FALSE(engine.has_work());
}

}  // namespace
}  // namespace actorllm
