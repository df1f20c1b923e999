// --generation-config: the model folder's generation_config.json under auto, none under vllm,
// another folder's when named; every value range-checked, naming the file and the field.
#include "actors/engine_setup/generation_defaults.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace actorllm {
namespace {

namespace fs = std::filesystem;

class generation_defaults : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("actorllm-gencfg-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "other");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& folder, const std::string& text) {
    std::ofstream(folder / "generation_config.json") << text;
  }
  fs::path dir_;
};

TEST_F(generation_defaults, auto_reads_the_model_folder_and_requests_start_from_it) {
  write(dir_, R"({"do_sample": true, "temperature": 0.6, "top_p": 0.95, "top_k": 20,
                  "repetition_penalty": 1.05, "bos_token_id": 1, "eos_token_id": [2, 3]})");
  const auto d = load_generation_defaults("auto", dir_);
  EXPECT_EQ(d.temperature, 0.6f);
  EXPECT_EQ(d.top_p, 0.95f);
  EXPECT_EQ(d.top_k, 20);
  EXPECT_EQ(d.repetition_penalty, 1.05f);
  EXPECT_FALSE(d.min_p.has_value());
  sampling_params p;
  d.apply(p);
  EXPECT_EQ(p.temperature, 0.6f);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_EQ(p.min_p, 0.0f);  // not in the file: OpenAI's default stays
  EXPECT_EQ(d.describe(), "temperature 0.6, top_p 0.95, top_k 20, repetition_penalty 1.05");
}

TEST_F(generation_defaults, vllm_ignores_the_file_and_a_missing_file_means_none) {
  write(dir_, R"({"temperature": 0.6})");
  EXPECT_TRUE(load_generation_defaults("vllm", dir_).empty());
  EXPECT_TRUE(load_generation_defaults("auto", dir_ / "other").empty());
}

TEST_F(generation_defaults, a_named_folder_is_read_and_must_hold_the_file) {
  write(dir_ / "other", R"({"min_p": 0.1})");
  EXPECT_EQ(load_generation_defaults((dir_ / "other").string(), dir_).min_p, 0.1f);
  EXPECT_THROW(load_generation_defaults((dir_ / "nowhere").string(), dir_), std::runtime_error);
}

TEST_F(generation_defaults, values_a_request_could_not_give_are_refused_by_field) {
  for (const auto& [text, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"temperature": 5})", "temperature"},
           {R"({"top_p": 0})", "top_p"},
           {R"({"top_k": 1.5})", "top_k"},
           {R"({"repetition_penalty": -1})", "repetition_penalty"}}) {
    write(dir_, text);
    try {
      load_generation_defaults("auto", dir_);
      ADD_FAILURE() << text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("field '" + field + "'"), std::string::npos) << e.what();
    }
  }
  write(dir_, "[1, 2]");
  EXPECT_THROW(load_generation_defaults("auto", dir_), std::runtime_error);
}

}  // namespace
}  // namespace actorllm
