// Embeddings (--task embed) through the actor-free engine: each vector equals a float64
// reference pooling of the model's final hidden states (tests/reference/reference_forward.py
// --embed), alone and batched with chunked prefill, preemption and generation requests in
// the same steps, for last-token and mean pooling; every block comes back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "actors/gpu_worker/cpu_backend.hpp"
#include "actors/offline_engine/llm_engine.hpp"
#include "tests/support/random_models.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

/// The reference embedding of `prompt` (float64, normalised).
std::vector<double> reference_embedding(const std::filesystem::path& model,
                                        const std::vector<int32_t>& prompt,
                                        const std::string& pooling) {
  std::string ids;
  for (int32_t id : prompt) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  const auto out = std::filesystem::temp_directory_path() /
                   ("actorllm-embed-" + std::to_string(::getpid()) + ".json");
  const std::string command = testing::python() + " " + std::string(ACTORLLM_SOURCE_DIR) +
                              "/tests/reference/reference_forward.py " + model.string() +
                              " --prompt " + ids + " --embed " + pooling + " --out " + out.string();
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
  std::ifstream in(out);
  const auto v = nlohmann::json::parse(in)["embedding"].get<std::vector<double>>();
  std::filesystem::remove(out);
  return v;
}

generate_request embed_request(std::string id, std::vector<int32_t> prompt, pooling_type pooling) {
  generate_request r = testing::ids_request(std::move(id), std::move(prompt), 1);
  r.params.pooling = pooling;
  return r;
}

engine_config embed_config(const std::filesystem::path& model, const std::string& pooling) {
  engine_config c = testing::stories_config(256, 256);
  c.model.model = model.string();
  c.model.task = "embed";
  c.model.pooling_type = pooling;
  return c;
}

std::vector<std::vector<int32_t>> prompts() {
  std::vector<int32_t> long_prompt{1};
  for (int i = 1; i < 37; ++i) long_prompt.push_back(3 + (i * 53) % 500);
  return {
      {1}, {1, 403, 407}, {1, 403, 407, 261, 378, 11, 42, 99, 7, 300, 301, 302, 8, 9}, long_prompt};
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double norm = 0, max_error = 0;
  for (size_t d = 0; d < got.size(); ++d) {
    norm += double(got[d]) * got[d];
    max_error = std::max(max_error, std::abs(got[d] - want[d]));
  }
  EXPECT_LT(max_error, 1e-4) << what;
  EXPECT_NEAR(norm, 1.0, 1e-5) << what;
}

TEST(embeddings_engine, vectors_equal_the_reference_pooling_alone_and_batched) {
  const auto model = testing::stories260k_dir();
  for (const auto& [name, pooling] : std::vector<std::pair<std::string, pooling_type>>{
           {"LAST", pooling_type::last}, {"MEAN", pooling_type::mean}}) {
    std::vector<std::vector<double>> want;
    for (const auto& p : prompts()) want.push_back(reference_embedding(model, p, name));
    // Alone, then all at once with a 7-token budget (chunked prompts) beside a generation.
    llm_engine engine(engine_setup::load(embed_config(model, name)));
    std::vector<generate_request> together;
    for (size_t i = 0; i < prompts().size(); ++i) {
      const auto out = run_to_completion(
          engine, {embed_request("a" + std::to_string(i), prompts()[i], pooling)})[0][0];
      EXPECT_EQ(out.finish, finish_reason::stop);
      EXPECT_TRUE(out.token_ids.empty());
      EXPECT_EQ(out.num_prompt_tokens, static_cast<int32_t>(prompts()[i].size()));
      expect_near(out.embedding, want[i], name + " alone, prompt " + std::to_string(i));
      together.push_back(embed_request("b" + std::to_string(i), prompts()[i], pooling));
    }
    auto c = embed_config(model, name);
    c.scheduler.max_num_batched_tokens = 7;
    llm_engine chunked(engine_setup::load(c));
    together.push_back(testing::ids_request("story", {1}, 30));
    const auto out = run_to_completion(chunked, together);
    for (size_t i = 0; i < prompts().size(); ++i)
      expect_near(out[i][0].embedding, want[i], name + " batched, prompt " + std::to_string(i));
    EXPECT_EQ(out.back()[0].token_ids.size(), 30u);  // generation beside them, untouched
    EXPECT_TRUE(out.back()[0].embedding.empty());
    EXPECT_EQ(chunked.stats().device.num_used, 0);
  }
}

TEST(embeddings_engine, preemption_recomputes_a_prompt_and_keeps_its_vector) {
  const auto model = testing::stories260k_dir();
  std::vector<int32_t> long_prompt{1};
  for (int i = 1; i < 60; ++i) long_prompt.push_back(3 + (i * 37) % 400);
  const auto want = reference_embedding(model, long_prompt, "MEAN");
  for (auto mode : {preemption_mode::recompute, preemption_mode::swap}) {
    auto c = embed_config(model, "MEAN");
    c.scheduler.max_num_batched_tokens = 8;
    c.scheduler.preemption = mode;
    c.cache.num_gpu_blocks_override = 16;  // 128 tokens: two sequences of about 60
    c.cache.block_size = 8;
    c.model.max_model_len = 128;
    llm_engine engine(engine_setup::load(c));
    std::vector<generate_request> requests;
    for (int i = 0; i < 4; ++i)
      requests.push_back(testing::ids_request("g" + std::to_string(i), {1}, 60));
    for (int i = 0; i < 3; ++i)
      requests.push_back(embed_request("e" + std::to_string(i), long_prompt, pooling_type::mean));
    const auto out = run_to_completion(engine, requests);
    for (int i = 0; i < 3; ++i) expect_near(out[4 + i][0].embedding, want, to_string(mode));
    EXPECT_GT(engine.stats().num_preemptions, 0) << to_string(mode);
    EXPECT_EQ(engine.stats().device.num_used, 0);
    EXPECT_EQ(engine.stats().cpu.num_used, 0);
  }
}

TEST(embeddings_engine, a_qwen3_model_embeds_as_its_reference_does) {
  const testing::random_model qwen3("embed_qwen3", "--arch qwen3");
  const std::vector<int32_t> prompt{1, 5, 9, 13, 200, 17};
  for (const std::string pooling : {"LAST", "MEAN"}) {
    llm_engine engine(engine_setup::load(embed_config(qwen3.dir(), pooling)));
    const auto out = run_to_completion(
        engine, {embed_request("q", prompt,
                               pooling == "LAST" ? pooling_type::last : pooling_type::mean)})[0][0];
    expect_near(out.embedding, reference_embedding(qwen3.dir(), prompt, pooling), pooling);
  }
}

/// The CPU backend under another device's name: what --task embed refuses at load.
class other_device_provider : public cpu_backend_provider {
 public:
  std::string device() const override { return "cuda:0"; }
};

TEST(embeddings_engine, a_device_without_embeddings_is_refused_at_load) {
  std::string error;
  try {
    engine_setup::load(embed_config(testing::stories260k_dir(), "LAST"),
                       std::make_shared<other_device_provider>());
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("--task embed"), std::string::npos) << error;
}

TEST(embeddings_engine, refuses_n_above_one) {
  llm_engine engine(engine_setup::load(embed_config(testing::stories260k_dir(), "LAST")));
  auto r = embed_request("n", {1, 2}, pooling_type::last);
  r.params.n = 2;
  const auto refused = engine.add_request(r);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->error_status, 400);
}

}  // namespace
}  // namespace actorllm
