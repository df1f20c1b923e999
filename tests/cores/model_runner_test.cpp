// The worker core refuses a step plan it cannot execute safely, rather than reading or
// writing past its tables: a plan is the protocol between scheduler and worker, and a remote
// or buggy scheduler must not make the worker index outside its embedding table.
#include "actors/gpu_worker/model_runner.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tests/support/test_data.hpp"

namespace actorllm {
namespace {

step_plan one_sequence_plan(std::vector<int32_t> tokens) {
  step_plan plan;
  plan.step = 1;
  new_sequence seq;
  seq.request_id = "r";
  seq.seq = 7;
  seq.num_prompt_tokens = static_cast<int32_t>(tokens.size());
  seq.params.temperature = 0;
  plan.new_seqs.push_back(seq);
  scheduled_sequence work;
  work.seq = 7;
  work.num_scheduled_tokens = static_cast<int32_t>(tokens.size());
  work.num_samples = 1;
  work.new_token_ids = std::move(tokens);
  work.new_block_ids = {0};
  plan.seqs.push_back(work);
  plan.num_scheduled_tokens = plan.seqs[0].num_scheduled_tokens;
  return plan;
}

class model_runner_test : public ::testing::Test {
 protected:
  model_runner_test() {
    config_.block_size = 16;
    config_.num_device_blocks = 4;
  }
  model_runner_config config_;
  std::shared_ptr<llama_model> model_ =
      std::make_shared<llama_model>(testing::stories260k_dir());
};

TEST_F(model_runner_test, a_plan_within_the_vocabulary_samples_a_token) {
  model_runner runner(model_, config_);
  const step_result result = runner.execute(one_sequence_plan({1, 400, 511}));
  ASSERT_EQ(result.seqs.size(), 1u);
  ASSERT_EQ(result.seqs[0].token_ids.size(), 1u);
  EXPECT_LT(result.seqs[0].token_ids[0], 512);
}

TEST_F(model_runner_test, a_token_id_outside_the_vocabulary_is_refused_not_embedded) {
  for (int32_t bad : {512, 1 << 30, -1}) {
    model_runner runner(model_, config_);
    try {
      runner.execute(one_sequence_plan({1, bad}));
      FAIL() << "token id " << bad << " was fed to a 512-row embedding table";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("token id " + std::to_string(bad)), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace actorllm
