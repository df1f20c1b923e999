// Several models behind one serve: --model NAME=PATH, --models-dir, --model-config and the
// plan of one engine_config per model.
#include "config/served_models.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/config/serve_flags.hpp"

namespace actorllm {
namespace {

namespace fs = std::filesystem;

/// A scratch folder, removed at the end of the test.
struct scratch {
  fs::path dir = fs::temp_directory_path() /
                 ("served_models_test_" +
                  std::to_string(::testing::UnitTest::GetInstance()->current_test_info()->line()));
  scratch() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~scratch() { fs::remove_all(dir); }
  /// A model folder (a config.json is all the listing looks for).
  std::string model(const std::string& name) const {
    fs::create_directories(dir / name);
    std::ofstream(dir / name / "config.json") << "{}";
    return (dir / name).string();
  }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

TEST(served_models, model_names_are_bounded_and_need_no_quoting) {
  EXPECT_TRUE(is_model_name("qwen3"));
  EXPECT_TRUE(is_model_name("Llama-3.2-1B_instruct:q8"));
  EXPECT_FALSE(is_model_name(""));
  EXPECT_FALSE(is_model_name("-leading-dash"));
  EXPECT_FALSE(is_model_name("a/b"));
  EXPECT_FALSE(is_model_name("with space"));
  EXPECT_FALSE(is_model_name("quote\""));
  EXPECT_TRUE(is_model_name(std::string(max_model_name_length, 'a')));
  EXPECT_FALSE(is_model_name(std::string(max_model_name_length + 1, 'a')));
}

TEST(served_models, model_takes_a_folder_or_name_equals_path) {
  engine_config c;
  ASSERT_FALSE(testing::parse_serve_flags(
      c, {"/models/base", "--model", "qwen=/models/qwen3", "--model", "gemma=../g2"}));
  EXPECT_EQ(c.model.model, "/models/base");
  EXPECT_EQ(c.models.named,
            (std::vector<named_model>{{"qwen", "/models/qwen3"}, {"gemma", "../g2"}}));
  EXPECT_TRUE(c.models.many());
  EXPECT_TRUE(c.validate().empty());

  engine_config plain;  // a path is a path, even with an '=' in a folder's name
  ASSERT_FALSE(testing::parse_serve_flags(plain, {"--model", "/models/a=b"}));
  EXPECT_EQ(plain.model.model, "/models/a=b");
  EXPECT_FALSE(plain.models.many());

  engine_config twice;
  EXPECT_EQ(*testing::parse_serve_flags(twice, {"--model", "a=/x", "--model", "a=/y"}),
            "--model: model 'a' is given twice");
}

TEST(served_models, an_existing_folder_named_like_name_equals_path_is_a_folder) {
  scratch s;
  const std::string odd = s.model("x=y");
  EXPECT_FALSE(is_named_model(odd));
  EXPECT_TRUE(is_named_model("x=y/z"));
  EXPECT_FALSE(is_named_model("x="));
}

TEST(served_models, the_models_dir_lists_folders_with_a_config_sorted) {
  scratch s;
  s.model("zeta");
  s.model("alpha");
  fs::create_directories(s.dir / "no-config");
  s.file("notes.txt", "not a model");
  std::vector<named_model> found;
  ASSERT_EQ(list_models_dir(s.dir.string(), found), "");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].name, "alpha");
  EXPECT_EQ(found[1].name, "zeta");
  EXPECT_EQ(found[1].path, (s.dir / "zeta").string());

  s.model("bad name");
  EXPECT_NE(list_models_dir(s.dir.string(), found).find("'bad name' has no usable name"),
            std::string::npos);
  EXPECT_NE(list_models_dir((s.dir / "missing").string(), found).find("cannot read"),
            std::string::npos);
}

TEST(served_models, model_config_gives_each_model_flags_as_arguments) {
  std::map<std::string, std::vector<std::string>> flags;
  ASSERT_EQ(parse_model_config(R"({"qwen": {"max_model_len": 64, "dtype": "float32",
      "enable-prefix-caching": false, "enforce_eager": true,
      "lora_modules": ["a=/x", "b=/y"], "speculative_config": {"method": "ngram"}}})",
                               flags),
            "");
  EXPECT_EQ(flags["qwen"],
            (std::vector<std::string>{"--dtype", "float32", "--no-enable-prefix-caching",
                                      "--enforce-eager", "--lora-modules", "a=/x", "b=/y",
                                      "--max-model-len", "64", "--speculative-config",
                                      R"({"method":"ngram"})"}));
  EXPECT_NE(parse_model_config(R"({"qwen": {"cpu_threads": 2}})", flags)
                .find("'cpu_threads' cannot differ between models"),
            std::string::npos);
  EXPECT_NE(parse_model_config(R"({"qwen": {"served_model_name": "x"}})", flags), "");
  EXPECT_NE(parse_model_config(R"({"qwen": 3})", flags).find("must be an object"),
            std::string::npos);
  EXPECT_NE(parse_model_config("[1]", flags), "");
  EXPECT_NE(parse_model_config(R"({"qwen": {"dtype": null}})", flags), "");
}

TEST(served_models, plan_gives_each_model_its_engine_config) {
  scratch s;
  s.model("from-dir");
  engine_config base;
  const std::string config = s.file("models.json", R"({"qwen": {"max_model_len": 64,
      "replicas": 2, "tool_call_parser": "hermes", "reasoning_parser": "qwen3",
      "enable_auto_tool_choice": true}, "from-dir": {"no_enable_prefix_caching": true}})");
  ASSERT_FALSE(testing::parse_serve_flags(
      base,
      {"/models/stories260K/", "--model", "qwen=/models/qwen3", "--models-dir", s.dir.string(),
       "--model-config", config, "--max-model-len", "256", "--lora-modules", "sql=/adapters/sql"}));
  std::vector<model_plan> plans;
  ASSERT_EQ(plan_models(base, plans), "");
  ASSERT_EQ(plans.size(), 3u);
  // The positional model keeps today's name (its folder's) and the command line's adapters.
  EXPECT_EQ(plans[0].name, "stories260K");
  EXPECT_EQ(plans[0].config.model.served_model_name, "");
  EXPECT_EQ(plans[0].config.lora.modules.size(), 1u);
  EXPECT_EQ(plans[0].config.model.max_model_len, 256);
  EXPECT_EQ(plans[1].name, "qwen");
  EXPECT_EQ(plans[1].config.model.model, "/models/qwen3");
  EXPECT_EQ(plans[1].config.model.served_model_name, "qwen");
  EXPECT_EQ(plans[1].config.model.max_model_len, 64);  // its own flag wins
  EXPECT_EQ(plans[1].config.parallel.replicas, 2);
  EXPECT_TRUE(plans[1].config.lora.modules.empty());
  EXPECT_FALSE(plans[1].config.models.many());  // each engine loads one model
  EXPECT_EQ(plans[2].name, "from-dir");
  EXPECT_FALSE(plans[2].config.cache.enable_prefix_caching);
  EXPECT_TRUE(plans[0].config.cache.enable_prefix_caching);
  // Each model reads its output with its own parsers; the others keep the server's (none).
  EXPECT_EQ(plans[1].config.server.tool_call_parser, "hermes");
  EXPECT_EQ(plans[1].config.server.reasoning_parser, "qwen3");
  EXPECT_TRUE(plans[1].config.server.enable_auto_tool_choice);
  EXPECT_EQ(plans[0].config.server.tool_call_parser, "");
  EXPECT_FALSE(plans[2].config.server.enable_auto_tool_choice);
}

TEST(served_models, plan_refuses_what_cannot_be_served_naming_it) {
  scratch s;
  std::vector<model_plan> plans;
  engine_config c;
  c.models.named = {{"a", "/x"}};
  c.models.model_config_file = s.file("m.json", R"({"b": {"max_model_len": 64}})");
  EXPECT_EQ(plan_models(c, plans), "--model-config: 'b' names no served model");
  c.models.model_config_file = s.file("m.json", R"({"a": {"max_model_len": -4}})");
  EXPECT_EQ(plan_models(c, plans), "model 'a': --max-model-len: must be positive");
  c.models.model_config_file = s.file("m.json", R"({"a": {"no_such_flag": 1}})");
  EXPECT_NE(plan_models(c, plans).find("--no-such-flag"), std::string::npos);
  c.models.model_config_file = (s.dir / "missing.json").string();
  EXPECT_NE(plan_models(c, plans).find("--model-config: cannot read"), std::string::npos);
  c.models.model_config_file = s.file("big.json", std::string(max_model_config_bytes + 1, ' '));
  EXPECT_NE(plan_models(c, plans).find("more than the"), std::string::npos);
  c.models.model_config_file.clear();

  c.model.model = "/models/a";  // its folder's name is taken by --model a=...
  EXPECT_EQ(plan_models(c, plans), "two models are named 'a'");
  c.model.model.clear();
  c.model.served_model_name = "named";
  EXPECT_NE(plan_models(c, plans).find("--served-model-name"), std::string::npos);
  c.model.served_model_name.clear();

  c.models.named.clear();
  c.models.models_dir = s.dir.string();  // no model folder inside
  EXPECT_NE(plan_models(c, plans).find("holds no model"), std::string::npos);
  for (std::size_t i = 0; i <= max_served_models; ++i) s.model("m" + std::to_string(i));
  EXPECT_NE(plan_models(c, plans).find("at most 64"), std::string::npos);
  EXPECT_TRUE(plans.empty());
}

}  // namespace
}  // namespace actorllm
