// Beam search through the actor-free engine: the beams, their order, summed logprobs and
// finish reasons equal a float64 reference of vLLM's beam search
// (tests/reference/reference_forward.py --beam-width), with length penalties, beams that end
// (an end token in the candidates) and early stopping; beams share their prefix blocks and
// every block comes back, aborted or not.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "actors/offline_engine/llm_engine.hpp"
#include "common/output_merge.hpp"
#include "tests/support/random_models.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

struct search {
  std::vector<int32_t> prompt;
  int32_t width = 2;
  int32_t max_tokens = 8;
  float length_penalty = 1.0f;
  bool early_stopping = false;
};

nlohmann::json reference_beams(const std::filesystem::path& model, const search& s) {
  std::string ids;
  for (int32_t id : s.prompt) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  const auto out = std::filesystem::temp_directory_path() /
                   ("actorllm-beams-" + std::to_string(::getpid()) + ".json");
  const std::string command =
      testing::python() + " " + std::string(ACTORLLM_SOURCE_DIR) +
      "/tests/reference/reference_forward.py " + model.string() + " --prompt " + ids +
      " --beam-width " + std::to_string(s.width) + " --steps " + std::to_string(s.max_tokens) +
      " --length-penalty " + std::to_string(s.length_penalty) +
      (s.early_stopping ? " --early-stopping" : "") + " --out " + out.string();
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
  std::ifstream in(out);
  auto beams = nlohmann::json::parse(in)["beams"];
  std::filesystem::remove(out);
  return beams;
}

generate_request beam_request(const std::string& id, const search& s) {
  generate_request r = testing::ids_request(id, s.prompt, s.max_tokens);
  r.params.ignore_eos = false;
  r.params.n = s.width;
  r.params.beam.enabled = true;
  r.params.beam.length_penalty = s.length_penalty;
  r.params.beam.early_stopping = s.early_stopping;
  return r;
}

void expect_reference(const std::vector<request_output>& got, const nlohmann::json& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string at = what + ", beam " + std::to_string(i);
    EXPECT_EQ(got[i].token_ids, want[i]["tokens"].get<std::vector<int32_t>>()) << at;
    EXPECT_NEAR(got[i].cumulative_logprob, want[i]["cumulative_logprob"].get<double>(), 1e-4) << at;
    EXPECT_EQ(to_string(got[i].finish), want[i]["finish"].get<std::string>()) << at;
  }
}

/// stories260K with `eos` as its end token: one the model writes often, so beams end.
class stories_with_end_token {
 public:
  explicit stories_with_end_token(int32_t eos)
      : dir_(std::filesystem::temp_directory_path() /
             ("actorllm-beam-eos-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
    for (const char* f : {"model.safetensors", "tokenizer.json"})
      std::filesystem::copy_file(testing::stories260k_dir() / f, dir_ / f);
    nlohmann::json config =
        nlohmann::json::parse(std::ifstream(testing::stories260k_dir() / "config.json"));
    config["eos_token_id"] = eos;
    std::ofstream(dir_ / "config.json") << config.dump();
  }
  ~stories_with_end_token() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

engine_config config_for(const std::filesystem::path& model) {
  engine_config c = testing::stories_config(256, 64);
  c.model.model = model.string();
  return c;
}

TEST(beam_search_engine, beams_and_scores_equal_the_float64_reference) {
  const auto model = testing::stories260k_dir();
  const std::vector<search> searches = {
      {{1}, 1, 6},
      {{1, 403, 407}, 3, 12},
      {{1, 403, 407, 261, 378}, 4, 20, 0.5f},
      {{1, 261, 378, 403}, 2, 16, 2.0f},
  };
  llm_engine engine(engine_setup::load(config_for(model)));
  for (size_t i = 0; i < searches.size(); ++i) {
    const auto out =
        run_to_completion(engine, {beam_request("b" + std::to_string(i), searches[i])});
    expect_reference(out[0], reference_beams(model, searches[i]), "search " + std::to_string(i));
  }
  EXPECT_EQ(engine.stats().device.num_used, 0);
}

TEST(beam_search_engine, beams_that_end_are_ranked_with_the_running_ones) {
  const stories_with_end_token model(395);
  llm_engine engine(engine_setup::load(config_for(model.dir())));
  for (const search& s : std::vector<search>{{{1, 403, 407, 261, 378}, 3, 30},
                                             {{1, 403, 407, 261, 378}, 4, 30, 1.5f},
                                             {{1, 403, 407, 261, 378}, 3, 30, 1.0f, true},
                                             {{1, 403}, 3, 10}}) {
    const auto out = run_to_completion(engine, {beam_request("e", s)})[0];
    const auto want = reference_beams(model.dir(), s);
    expect_reference(out, want, "width " + std::to_string(s.width));
  }
  EXPECT_EQ(engine.stats().device.num_used, 0);
}

TEST(beam_search_engine, beams_share_their_prefix_blocks_and_batch_with_others) {
  // A 40-token prompt (5 blocks of 8) and 4 beams: forked beams hold the prompt's blocks once.
  std::vector<int32_t> prompt{1};
  for (int i = 1; i < 40; ++i) prompt.push_back(3 + (i * 37) % 400);
  const search s{prompt, 4, 12};
  auto c = testing::stories_config(256, 64);
  c.cache.block_size = 8;
  c.cache.enable_prefix_caching = false;    // only the forks can share
  c.scheduler.max_num_batched_tokens = 16;  // chunked prompts beside the beams
  llm_engine engine(engine_setup::load(c));
  ASSERT_FALSE(engine.add_request(beam_request("beams", s)).has_value());
  ASSERT_FALSE(engine.add_request(testing::ids_request("other", {1, 261}, 30)).has_value());
  int32_t most_used = 0;
  std::vector<request_output> beams(4);
  while (engine.has_work()) {
    for (const auto& out : engine.step())
      if (out.request_id == "beams") merge_output(beams, out);
    most_used = std::max(most_used, engine.stats().device.num_used);
  }
  // Unshared, 4 beams of up to 52 tokens would hold 4 x 7 blocks; shared, the prompt's 5 once
  // and each beam's tail (2 blocks) besides, with the other request's 4.
  EXPECT_LE(most_used, 5 + 4 * 2 + 4);
  expect_reference(beams, reference_beams(testing::stories260k_dir(), s), "batched");
  EXPECT_EQ(engine.stats().device.num_used, 0);
}

TEST(beam_search_engine, an_aborted_search_ends_every_choice_and_gives_its_blocks_back) {
  llm_engine engine(engine_setup::load(testing::stories_config(256, 64)));
  ASSERT_FALSE(engine.add_request(beam_request("a", {{1, 403}, 3, 50})).has_value());
  for (int i = 0; i < 5; ++i) engine.step();
  const auto outputs = engine.abort("a");
  std::set<int32_t> ended;
  for (const auto& out : outputs)
    if (out.finish == finish_reason::abort) ended.insert(out.index);
  EXPECT_EQ(ended, (std::set<int32_t>{0, 1, 2}));
  EXPECT_EQ(engine.stats().device.num_used, 0);
  while (engine.has_work()) EXPECT_TRUE(engine.step().empty());  // the workers forget the beams
}

}  // namespace
}  // namespace actorllm
