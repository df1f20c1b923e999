// Joining a server from another process: the flags that require a shared secret, the model
// identity a worker must share with the server, and the join point refusing (naming what
// differs) or admitting a worker over real loopback TCP.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "actors/system/cluster_admission.hpp"
#include "config/engine_flags.hpp"
#include "tests/actors/remote_worker_node.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

namespace fs = std::filesystem;

const std::string secret = "correct horse battery staple";

/// Parses `args` (without argv[0]) with the cluster flags of serve (or worker).
std::optional<std::string> parse_cluster(cluster_config& c, std::vector<std::string> args,
                                         bool serving = true) {
  flag_parser p("test", "test");
  add_cluster_flags(p, c, serving);
  std::vector<char*> argv{const_cast<char*>("test")};
  for (auto& a : args) argv.push_back(a.data());
  return p.parse(static_cast<int>(argv.size()), argv.data());
}

/// A temporary copy of stories260K, deleted at the end of the test.
struct model_copy {
  fs::path dir;
  model_copy() {
    dir = fs::temp_directory_path() /
          ("actorllm-cluster-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
      fs::copy_file(testing::stories260k_dir() / f, dir / f);
  }
  ~model_copy() { fs::remove_all(dir); }
  engine_config config() const {
    auto c = testing::stories_config(256, 16);
    c.model.model = dir.string();
    return c;
  }
};

TEST(cluster_config, joining_needs_a_secret_or_the_insecure_flag_on_a_loopback_address) {
  cluster_config c;
  c.port = 7000;
  EXPECT_NE(c.refusal("127.0.0.1").find("--cluster-secret-file"), std::string::npos)
      << c.refusal("127.0.0.1");
  c.insecure_loopback = true;
  EXPECT_EQ(c.refusal("127.0.0.1"), "");
  EXPECT_EQ(c.refusal("::1"), "");
  EXPECT_EQ(c.refusal("localhost"), "");
  EXPECT_NE(c.refusal("0.0.0.0").find("is not a loopback address"), std::string::npos);
  EXPECT_NE(c.refusal("10.1.2.3"), "");
  c.insecure_loopback = false;
  c.secret = secret;
  EXPECT_EQ(c.refusal("0.0.0.0"), "");
}

TEST(cluster_config, the_secret_file_gives_its_first_line_and_a_missing_or_empty_one_is_refused) {
  const fs::path file =
      fs::temp_directory_path() / ("actorllm-secret-" + std::to_string(::getpid()));
  std::ofstream(file) << secret << "\n";
  cluster_config c;
  EXPECT_FALSE(parse_cluster(c, {"--cluster-secret-file", file.string(), "--cluster-port", "0"}));
  EXPECT_EQ(c.secret, secret);
  EXPECT_EQ(c.port, 0);
  std::ofstream(file) << "\n";
  cluster_config empty;
  auto error = parse_cluster(empty, {"--cluster-secret-file", file.string()}, false);
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("holds no secret"), std::string::npos) << *error;
  fs::remove(file);
  error = parse_cluster(empty, {"--cluster-secret-file", file.string()}, false);
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("cannot read"), std::string::npos) << *error;
  cluster_config given;
  EXPECT_FALSE(parse_cluster(given, {"--cluster-secret", "abc", "--cluster-insecure-loopback"}));
  EXPECT_EQ(given.secret, "abc");
  EXPECT_TRUE(given.insecure_loopback);
  // The worker has no cluster port of its own.
  cluster_config worker;
  EXPECT_TRUE(parse_cluster(worker, {"--cluster-port", "1"}, false));
}

TEST(cluster_admission, secrets_are_equal_only_when_identical) {
  EXPECT_TRUE(secrets_equal("abc", "abc"));
  EXPECT_FALSE(secrets_equal("abc", "abd"));
  EXPECT_FALSE(secrets_equal("abc", "ab"));
  EXPECT_FALSE(secrets_equal("abc", "abcabc"));
  EXPECT_FALSE(secrets_equal("abc", ""));
  EXPECT_FALSE(secrets_equal("", ""));
  EXPECT_FALSE(secrets_equal("", "x"));
}

TEST(cluster_admission, the_model_identity_names_each_difference_with_both_values) {
  model_copy copy;
  const model_identity same = identify_model(copy.config());
  EXPECT_EQ(same.vocab_size, 512);
  EXPECT_EQ(same.block_size, 16);
  EXPECT_EQ(same.weights.size(), 16u);
  EXPECT_TRUE(identity_differences(identify_model(testing::stories_config(256, 16)), same).empty());

  {  // config.json: another hidden_size and vocab_size
    std::ifstream in(copy.dir / "config.json");
    auto j = nlohmann::json::parse(in);
    j["rms_norm_eps"] = 0.5;
    j["vocab_size"] = 1024;
    std::ofstream(copy.dir / "config.json") << j.dump(2);
  }
  {  // tokenizer.json: one byte more
    std::ofstream(copy.dir / "tokenizer.json", std::ios::app) << " ";
  }
  {  // the weights: same shapes, one value changed near the end (a fine-tune, say)
    std::fstream f(copy.dir / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-100, std::ios::end);
    f.put('\x7f');
  }
  auto other = copy.config();
  other.cache.block_size = 32;
  const auto server = identify_model(testing::stories_config(256, 16));
  const auto worker = identify_model(other);
  const auto diffs = identity_differences(server, worker);
  std::string all;
  for (const auto& d : diffs) all += d + "\n";
  EXPECT_NE(all.find("config.json rms_norm_eps: 1e-05 (server) vs 0.5 (worker)"), std::string::npos)
      << all;
  EXPECT_NE(all.find("vocab size: 512 (server) vs 1024 (worker)"), std::string::npos) << all;
  EXPECT_NE(all.find("weights fingerprint: " + server.weights + " (server) vs " + worker.weights +
                     " (worker)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("tokenizer.json hash: " + server.tokenizer + " (server) vs " +
                     worker.tokenizer + " (worker)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("--block-size: 16 (server) vs 32 (worker)"), std::string::npos) << all;
  EXPECT_EQ(diffs.size(), 5u) << all;

  const cluster_admission gate(secret, server);
  EXPECT_EQ(gate.refusal(secret, server), "");
  EXPECT_EQ(gate.refusal("wrong", server), "wrong cluster secret");
  EXPECT_NE(gate.refusal("", server).find("requires the cluster secret"), std::string::npos);
  EXPECT_NE(gate.refusal(secret, worker).find("another model"), std::string::npos);
  // Without a secret (loopback only) the model must still match.
  const cluster_admission open("", server);
  EXPECT_EQ(open.refusal("", server), "");
  EXPECT_NE(open.refusal("", worker).find("weights fingerprint"), std::string::npos);
}

/// A server with one local replica whose join point listens on loopback with the secret.
struct cluster_server {
  engine_system engine{testing::stories_config(256, 16)};
  uint16_t port = 0;
  explicit cluster_server(const std::string& key = secret) {
    auto bound = engine.publish(0, "127.0.0.1", key);
    if (auto* p = std::get_if<uint16_t>(&bound))
      port = *p;
    else
      ADD_FAILURE() << std::get<std::string>(bound);
  }
};

std::string refusal_of(const std::variant<joined_cluster, std::string>& joined) {
  if (auto* why = std::get_if<std::string>(&joined)) return *why;
  return "(joined as replica " + std::to_string(std::get<joined_cluster>(joined).replica) + ")";
}

TEST(cluster_join, a_worker_without_the_secret_or_with_a_wrong_one_is_refused) {
  cluster_server server;
  testing::remote_worker_node node(testing::stories_config(256, 16));
  EXPECT_EQ(refusal_of(node.join(server.port, "")),
            "the server refused this worker: this server requires the cluster secret: start the "
            "worker with --cluster-secret-file PATH");
  EXPECT_EQ(refusal_of(node.join(server.port, secret + "!")),
            "the server refused this worker: wrong cluster secret");
  EXPECT_EQ(refusal_of(node.join(server.port, "x")),
            "the server refused this worker: wrong cluster secret");
  EXPECT_EQ(server.engine.stats().size(), 1u) << "a refused worker must not become a replica";
}

TEST(cluster_join, a_worker_serving_another_model_is_refused_naming_both_sides) {
  cluster_server server;
  testing::remote_worker_node node(testing::stories_config(256, 16));
  model_copy copy;
  std::ofstream(copy.dir / "tokenizer.json", std::ios::app) << "\n";
  auto request = node.request(secret);
  request.model = identify_model(copy.config());
  request.model.config_values[0] = "\"something-else\"";
  const std::string why = refusal_of(node.join(server.port, request));
  EXPECT_NE(why.find("another model"), std::string::npos) << why;
  EXPECT_NE(why.find("tokenizer.json hash: "), std::string::npos) << why;
  EXPECT_NE(why.find("(server) vs \"something-else\" (worker)"), std::string::npos) << why;
  EXPECT_EQ(server.engine.stats().size(), 1u);
}

TEST(cluster_join, a_worker_with_the_secret_and_the_same_model_joins_and_serves) {
  cluster_server server;
  testing::remote_worker_node node(testing::stories_config(256, 16));
  const auto joined = node.join(server.port, secret);
  ASSERT_TRUE(std::holds_alternative<joined_cluster>(joined)) << refusal_of(joined);
  EXPECT_EQ(std::get<joined_cluster>(joined).replica, 1);
  // Replica 0 drains, so every request goes to the remote worker.
  EXPECT_TRUE(server.engine.drain_replica(0));
  const auto golden = testing::ids_request("g", {1}, 40);
  const auto out = server.engine.client().generate({golden});
  EXPECT_EQ(out[0][0].finish, finish_reason::length);
  EXPECT_EQ(out[0][0].token_ids.size(), 40u);
  const auto stats = server.engine.stats();  // in the order the replicas answered
  ASSERT_EQ(stats.size(), 2u);
  for (const auto& s : stats) {
    if (s.replica == 1) {
      EXPECT_GT(s.num_steps, 0u) << "the remote replica served the request";
    } else {
      EXPECT_EQ(s.num_steps, 0u) << "the drained local replica served nothing";
    }
  }
}

TEST(cluster_join, without_a_secret_a_loopback_server_still_checks_the_model) {
  cluster_server server("");
  testing::remote_worker_node node(testing::stories_config(256, 16));
  auto request = node.request("");
  request.model.weights = "0000000000000000";
  EXPECT_NE(refusal_of(node.join(server.port, request)).find("weights fingerprint"),
            std::string::npos);
  EXPECT_EQ(std::get<joined_cluster>(node.join(server.port, "")).replica, 1);
}

}  // namespace
}  // namespace actorllm
