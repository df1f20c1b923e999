// Flags parse into the config with vLLM's names; bad values are one clear line each.
#include <gtest/gtest.h>

#include "config/engine_flags.hpp"
#include "tests/config/serve_flags.hpp"

namespace actorllm {
namespace {

std::optional<std::string> parse(engine_config& c, std::vector<std::string> args) {
  return testing::parse_serve_flags(c, std::move(args));
}

TEST(engine_config, defaults_validate_once_a_model_is_given) {
  engine_config c;
  EXPECT_FALSE(c.validate().empty());
  c.model.model = "m";
  EXPECT_TRUE(c.validate().empty());
}

TEST(engine_config, vllm_flag_names_parse) {
  engine_config c;
  EXPECT_FALSE(parse(
      c, {"models/x", "--block-size", "32", "--swap-space=2", "--preemption-mode", "swap",
          "--max-num-seqs", "8", "--no-enable-prefix-caching", "--port", "9000",
          "--num-gpu-blocks-override", "64", "--stream-interval", "4", "--no-async-scheduling"}));
  EXPECT_EQ(c.model.model, "models/x");
  EXPECT_EQ(c.cache.block_size, 32);
  EXPECT_DOUBLE_EQ(c.cache.swap_space_gib, 2.0);
  EXPECT_EQ(c.scheduler.preemption, preemption_mode::swap);
  EXPECT_EQ(c.scheduler.max_num_seqs, 8);
  EXPECT_FALSE(c.cache.enable_prefix_caching);
  EXPECT_EQ(c.server.port, 9000);
  EXPECT_EQ(c.cache.num_gpu_blocks_override, 64);
  EXPECT_EQ(c.scheduler.stream_interval, 4);
  EXPECT_FALSE(c.scheduler.async_scheduling);
  EXPECT_TRUE(engine_config{}.scheduler.async_scheduling);  // on unless turned off
}

TEST(engine_config, bad_values_are_one_clear_line) {
  engine_config c;
  EXPECT_EQ(*parse(c, {"--block-size", "abc"}), "--block-size: 'abc' is not a whole number");
  EXPECT_EQ(*parse(c, {"--preemption-mode", "drop"}),
            "--preemption-mode: must be recompute or swap (got 'drop')");
  EXPECT_EQ(*parse(c, {"--bogus"}), "unknown flag --bogus (see --help)");
  EXPECT_EQ(*parse(c, {"--port", "70000"}), "--port: must be in 1..65535");
  c.model.model = "m";
  c.cache.block_size = 7;
  ASSERT_EQ(c.validate().size(), 1u);
  EXPECT_NE(c.validate()[0].find("--block-size"), std::string::npos);
  engine_config d;
  EXPECT_FALSE(parse(d, {"m", "--kv-cache-dtype", "int4"}));
  ASSERT_EQ(d.validate().size(), 1u);
  EXPECT_EQ(d.validate()[0], "--kv-cache-dtype: must be auto, float32, float16 or fp8 (fp8_e4m3)");
  engine_config q;
  EXPECT_FALSE(parse(q, {"m", "--quantization", "gptq"}));
  ASSERT_EQ(q.validate().size(), 1u);
  EXPECT_EQ(q.validate()[0],
            "--quantization: must be none, int8 or int4 (got 'gptq'; quantized checkpoints are "
            "recognised from config.json)");
  engine_config int4;
  EXPECT_FALSE(parse(int4, {"m", "--quantization", "int4"}));
  EXPECT_TRUE(int4.validate().empty());
  engine_config e;
  EXPECT_FALSE(parse(e, {"m", "--stream-interval", "0"}));
  EXPECT_EQ(e.validate(), std::vector<std::string>{"--stream-interval: must be >= 1"});
}

TEST(engine_config, the_responses_store_flags_parse_and_are_checked) {
  engine_config c;
  EXPECT_FALSE(parse(c, {"m", "--responses-store-max-items", "5", "--responses-store-max-bytes",
                         "4096", "--responses-store-path", "/var/lib/responses"}));
  EXPECT_EQ(c.server.responses_store_max_items, 5);
  EXPECT_EQ(c.server.responses_store_max_bytes, 4096);
  EXPECT_EQ(c.server.responses_store_path, "/var/lib/responses");
  EXPECT_TRUE(c.validate().empty());
  EXPECT_EQ(engine_config{}.server.responses_store_max_items, 1000);
  EXPECT_TRUE(engine_config{}.server.responses_store_path.empty());  // in memory
  engine_config bad;
  EXPECT_FALSE(
      parse(bad, {"m", "--responses-store-max-items", "-1", "--responses-store-max-bytes", "0"}));
  EXPECT_EQ(bad.validate(),
            (std::vector<std::string>{"--responses-store-max-items: must be >= 0",
                                      "--responses-store-max-bytes: must be positive"}));
}

TEST(engine_config, cpu_bind_takes_none_or_cores) {
  EXPECT_EQ(engine_config{}.parallel.cpu_bind, "none");
  engine_config c;
  EXPECT_FALSE(parse(c, {"m", "--cpu-bind", "cores", "--cpu-threads", "2"}));
  EXPECT_EQ(c.parallel.cpu_bind, "cores");
  EXPECT_TRUE(c.validate().empty());
  engine_config bad;
  EXPECT_FALSE(parse(bad, {"m", "--cpu-bind", "0-3"}));
  EXPECT_EQ(bad.validate(),
            std::vector<std::string>{"--cpu-bind: must be none or cores (got '0-3')"});
}

// A launch script written for vLLM runs unchanged: its common flags parse, the no-ops say so
// in --help, and the ones with an effect here take it.
TEST(engine_config, vllms_common_launch_flags_are_accepted) {
  engine_config c;
  EXPECT_FALSE(
      parse(c, {"m", "--enable-chunked-prefill", "--disable-log-requests", "--disable-log-stats",
                "--trust-remote-code", "--enforce-eager", "--max-logprobs", "5",
                "--generation-config", "vllm", "--no-enable-chunked-prefill"}));
  EXPECT_EQ(c.server.log_stats_interval, 0.0);
  EXPECT_TRUE(c.model.enforce_eager);  // CUDA graphs off
  EXPECT_EQ(c.model.max_logprobs, 5);
  EXPECT_EQ(c.model.generation_config, "vllm");
  EXPECT_TRUE(c.validate().empty());
  engine_config d;
  EXPECT_FALSE(parse(d, {"m", "--max-logprobs", "5000"}));
  EXPECT_EQ(d.validate().front(), "--max-logprobs: must be in [0, 1024]");

  flag_parser p("actorllm serve", "test");
  add_engine_flags(p, c);
  const auto help = p.help();
  for (const char* flag :
       {"--enable-chunked-prefill", "--disable-log-requests", "--trust-remote-code"}) {
    const auto at = help.find(flag);
    ASSERT_NE(at, std::string::npos) << flag;
    EXPECT_NE(help.find("vLLM's; accepted", at), std::string::npos) << flag;
  }
}

TEST(engine_config, help_lists_every_flag) {
  engine_config c;
  flag_parser p("actorllm serve", "test");
  add_engine_flags(p, c);
  add_server_flags(p, c);
  const auto help = p.help();
  for (const char* flag : {"--model",
                           "--dtype",
                           "--max-model-len",
                           "--block-size",
                           "--swap-space",
                           "--num-gpu-blocks-override",
                           "--num-cpu-blocks-override",
                           "--preemption-mode",
                           "--max-num-seqs",
                           "--max-num-batched-tokens",
                           "--gpu-memory-utilization",
                           "--tensor-parallel-size",
                           "--seed",
                           "--quantization",
                           "--host",
                           "--port",
                           "--api-key",
                           "--served-model-name",
                           "--autoscale",
                           "--admin-api-key",
                           "--disable-web-ui"})
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  // Defaults read as written: 0.9 and 4, not 0.900000.
  EXPECT_NE(help.find("(default 0.9)"), std::string::npos) << help;
  EXPECT_NE(help.find("(default 4)"), std::string::npos) << help;
  EXPECT_EQ(help.find("000000)"), std::string::npos) << help;
}

TEST(engine_config, autoscale_takes_min_and_max) {
  engine_config c;
  EXPECT_FALSE(parse(c, {"--autoscale", "2:5"}));
  EXPECT_EQ(c.autoscale.min_replicas, 2);
  EXPECT_EQ(c.autoscale.max_replicas, 5);
  EXPECT_TRUE(c.autoscale.enabled());
  for (const char* bad : {"3", "0:2", "4:2", "1:65", "a:b", ":"}) {
    engine_config d;
    EXPECT_TRUE(parse(d, {"--autoscale", bad})) << bad;
  }
}

}  // namespace
}  // namespace actorllm

namespace actorllm {
namespace {

// vLLM's LoRA flags: --lora-modules takes several NAME=PATH (or JSON) values after it, and may
// be repeated; modules imply --enable-lora; bad values and combinations are one line each.
TEST(lora_flags, modules_parse_as_vllm_writes_them) {
  engine_config c;
  EXPECT_FALSE(parse(c, {"--lora-modules", "sql=/a/sql", "chat=/a/chat", "--max-loras", "3",
                         "--lora-modules", R"({"name":"json","path":"/a/j","base_model_name":"m"})",
                         "--max-lora-rank", "64", "m", "--enable-lora-runtime-updates"}));
  EXPECT_EQ(c.model.model, "m");
  EXPECT_TRUE(c.lora.enable_lora);
  EXPECT_TRUE(c.lora.runtime_updates);
  EXPECT_EQ(c.lora.max_loras, 3);
  EXPECT_EQ(c.lora.max_lora_rank, 64);
  const std::vector<lora_module> want{{"sql", "/a/sql"}, {"chat", "/a/chat"}, {"json", "/a/j"}};
  EXPECT_EQ(c.lora.modules, want);
  EXPECT_TRUE(c.validate().empty()) << c.validate().front();
}

TEST(lora_flags, bad_modules_and_combinations_are_one_clear_line) {
  engine_config c;
  EXPECT_EQ(*parse(c, {"--lora-modules", "nopath"}),
            "--lora-modules: must be NAME=PATH (got 'nopath')");
  EXPECT_EQ(*parse(c, {"--lora-modules", "a=/x", "a=/y"}),
            "--lora-modules: adapter 'a' is given twice");
  EXPECT_EQ(*parse(c, {"--lora-modules", R"({"name":"a","rank":4})"}),
            "--lora-modules: unknown key 'rank' (known: name, path, base_model_name)");
  EXPECT_EQ(*parse(c, {"--lora-modules", "=/x"}),
            "--lora-modules: an adapter needs a name and a path");
  engine_config tp;
  EXPECT_FALSE(
      parse(tp, {"m", "--enable-lora", "--tensor-parallel-size", "2", "--max-loras", "0"}));
  const auto errors = tp.validate();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0], "--max-loras: must be in [1, 64]");
  EXPECT_EQ(errors[1], "--enable-lora: adapters run on one shard (--tensor-parallel-size 1)");
  engine_config off;
  EXPECT_FALSE(parse(off, {"m", "--enable-lora-runtime-updates"}));
  EXPECT_EQ(off.validate(),
            std::vector<std::string>{
                "--lora-modules and --enable-lora-runtime-updates need --enable-lora"});
}

}  // namespace
}  // namespace actorllm
