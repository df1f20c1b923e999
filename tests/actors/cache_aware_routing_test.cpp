// Cache-aware routing through the actors: two replicas, four conversations; each second turn
// goes to the replica that served the first (its KV events told the router), finds the whole
// first turn in that replica's prefix cache, and answers exactly as under least-load routing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "actors/system/engine_system.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

struct run {
  std::vector<std::vector<int32_t>> second_turn_tokens;
  std::vector<int32_t> second_turn_cached;
};

run converse(routing_policy policy) {
  auto config = testing::stories_config(256, 16);
  config.parallel.replicas = 2;
  config.parallel.routing = policy;
  engine_system engine(config);
  std::vector<generate_request> first, second;
  for (int c = 0; c < 4; ++c) {
    std::vector<int32_t> prompt{1};
    for (int i = 1; i < 48; ++i) prompt.push_back(3 + (i * (7 + 2 * c)) % 400);
    first.push_back(testing::ids_request("first" + std::to_string(c), prompt, 16));
  }
  const auto answers = engine.client().generate(first);  // at once: spread over both replicas
  for (int c = 0; c < 4; ++c) {
    std::vector<int32_t> next = first[c].token_ids;
    next.insert(next.end(), answers[c][0].token_ids.begin(), answers[c][0].token_ids.end());
    for (int32_t t : {261, 378, 403}) next.push_back(t);  // the user's next words
    second.push_back(testing::ids_request("second" + std::to_string(c), next, 8));
  }
  // The next turns come back in the other order: load alone would deal them out afresh.
  std::reverse(second.begin(), second.end());
  const auto replies = engine.client().generate(second);
  run r;
  for (int c = 3; c >= 0; --c) {
    r.second_turn_tokens.push_back(replies[c][0].token_ids);
    r.second_turn_cached.push_back(replies[c][0].num_cached_tokens);
  }
  return r;
}

TEST(cache_aware_routing, a_conversations_next_turn_finds_its_prefix_where_it_was_served) {
  const run aware = converse(routing_policy::cache_aware);
  const run by_load = converse(routing_policy::least_load);
  for (int c = 0; c < 4; ++c) {
    // The first turn's 48 prompt tokens are 3 full blocks of 16 on the replica that ran it (the
    // 4th block's last token, the last one sampled, was never computed, so it is not cached).
    EXPECT_GE(aware.second_turn_cached[c], 48) << "conversation " << c;
    EXPECT_EQ(aware.second_turn_tokens[c], by_load.second_turn_tokens[c]) << "conversation " << c;
  }
  int32_t aware_total = 0, by_load_total = 0;
  for (int c = 0; c < 4; ++c) {
    aware_total += aware.second_turn_cached[c];
    by_load_total += by_load.second_turn_cached[c];
  }
  EXPECT_GT(aware_total, by_load_total);
  std::printf("second turns' cached tokens: cache_aware %d, least_load %d\n", aware_total,
              by_load_total);
}

/// Prompt tokens replica `index` has computed, from the engine view.
int64_t prompt_tokens_of(engine_system& engine, int32_t index) {
  const auto view = nlohmann::json::parse(engine.client().engine_stats_json());
  for (const auto& replica : view["replicas"])
    if (replica["id"].get<int32_t>() == index) return replica["prompt_tokens"].get<int64_t>();
  return -1;
}

TEST(cache_aware_routing, a_session_stays_on_its_replica_while_it_serves) {
  for (const bool with_session : {true, false}) {
    auto config = testing::stories_config(256, 16);
    config.parallel.replicas = 2;
    engine_system engine(config);
    auto alice = testing::ids_request("alice1", {1, 5, 9, 13}, 40);
    auto bob = testing::ids_request("bob1", {1, 6, 10, 14}, 40);
    alice.session = with_session ? "alice" : "";
    bob.session = with_session ? "bob" : "";
    engine.client().generate({alice, bob});  // at once: alice on replica 0, bob on replica 1
    ASSERT_TRUE(testing::eventually([&] { return prompt_tokens_of(engine, 1) == 4; }));
    // Bob's next turn shares no prefix with his first: only his session can keep him there;
    // load alone sends it to replica 0 (both idle, the lower index).
    auto next = testing::ids_request("bob2", {1, 300, 301, 302, 303}, 4);
    next.session = bob.session;
    engine.client().generate({next});
    const int32_t expected = with_session ? 1 : 0;
    EXPECT_TRUE(testing::eventually([&] {
      return prompt_tokens_of(engine, expected) == 9;  // 4 + 5
    })) << (with_session ? "with" : "without")
        << " a session";
  }
}

}  // namespace
}  // namespace actorllm
