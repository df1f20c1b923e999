// Request preparation on the real stories260K tokenizer (512 ids; "<s>" is 1; "▁Lily",
// "▁was" and "▁happy" are single pieces, 317, 286 and 393), with a stand-in chat renderer:
// what each kind of prompt becomes, BOS, truncation, the context-length checks, and every
// refusal with its message, parameter and status.
#include "actors/request_router/prompt_builder.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/stories_tokenizer.hpp"
#include "tests/support/test_data.hpp"

namespace actorllm {
namespace {

using ids = std::vector<int32_t>;

constexpr int32_t max_model_len = 16;

prompt_builder builder(chat_renderer render = {}) {
  return prompt_builder(testing::stories_tokenizer(), std::move(render), "stories", max_model_len);
}

generate_request text_request(std::string text, bool add_special_tokens = true) {
  generate_request r;
  r.kind = prompt_kind::text;
  r.text = std::move(text);
  r.add_special_tokens = add_special_tokens;
  r.params.max_tokens = 1;
  return r;
}

generate_request ids_request(ids token_ids) {
  generate_request r;
  r.kind = prompt_kind::token_ids;
  r.token_ids = std::move(token_ids);
  r.params.max_tokens = 1;
  return r;
}

generate_request chat_request(std::string chat_json, bool add_generation_prompt = true) {
  generate_request r;
  r.kind = prompt_kind::chat;
  r.chat_json = std::move(chat_json);
  r.add_generation_prompt = add_generation_prompt;
  r.params.max_tokens = 1;
  return r;
}

void expect_refused(const prepared_prompt& p, const std::string& error, const std::string& param,
                    int32_t status = 400) {
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(p.error, error);
  EXPECT_EQ(p.error_param, param);
  EXPECT_EQ(p.status, status);
  EXPECT_TRUE(p.token_ids.empty());
}

TEST(prompt_builder, a_text_prompt_gets_bos_when_special_tokens_are_added) {
  const auto p = builder().prepare(text_request("Lily was happy"));
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.status, 200);
  EXPECT_EQ(p.token_ids, (ids{1, 317, 286, 393}));
}

TEST(prompt_builder, a_text_prompt_without_special_tokens_has_no_bos) {
  const auto p = builder().prepare(text_request("Lily was happy", false));
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.token_ids, (ids{317, 286, 393}));
}

TEST(prompt_builder, a_token_prompt_is_taken_as_given) {
  auto r = ids_request({317, 286});
  r.add_special_tokens = true;  // for text prompts only: no BOS is added to ids
  auto p = builder().prepare(r);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.token_ids, (ids{317, 286}));

  p = builder().prepare(ids_request({0, 511}));  // both ends of the vocabulary
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.token_ids, (ids{0, 511}));
}

TEST(prompt_builder, a_token_outside_the_vocabulary_is_refused) {
  expect_refused(builder().prepare(ids_request({1, 512})),
                 "prompt token 512 is outside the vocabulary (size 512)", "prompt");
  expect_refused(builder().prepare(ids_request({-1})),
                 "prompt token -1 is outside the vocabulary (size 512)", "prompt");
}

TEST(prompt_builder, an_empty_prompt_is_refused) {
  expect_refused(builder().prepare(text_request("", false)), "the prompt is empty", "prompt");
  expect_refused(builder().prepare(ids_request({})), "the prompt is empty", "prompt");
}

TEST(prompt_builder, a_chat_prompt_is_rendered_and_tokenized_without_a_second_bos) {
  std::string seen_json;
  std::vector<bool> seen_flags;
  auto render = [&](const std::string& chat_json, bool add_generation_prompt) {
    seen_json = chat_json;
    seen_flags.push_back(add_generation_prompt);
    return std::string("<s>Lily was");  // the template writes BOS itself
  };
  const std::string chat = R"({"messages":[{"role":"user","content":"hi"}]})";
  auto p = builder(render).prepare(chat_request(chat));
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.token_ids, (ids{1, 317, 286}));
  EXPECT_EQ(seen_json, chat);

  p = builder(render).prepare(chat_request(chat, false));
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(seen_flags, (std::vector<bool>{true, false}));
}

TEST(prompt_builder, a_chat_prompt_without_a_template_is_refused) {
  expect_refused(builder().prepare(chat_request(R"({"messages":[]})")),
                 "this model has no chat template; use /v1/completions", "messages");
}

TEST(prompt_builder, a_failing_chat_template_is_refused_with_its_message) {
  auto render = [](const std::string&, bool) -> std::string {
    throw std::runtime_error("Conversation roles must alternate (line 3)");
  };
  expect_refused(builder(render).prepare(chat_request(R"({"messages":[]})")),
                 "chat template failed: Conversation roles must alternate (line 3)", "messages");
}

TEST(prompt_builder, a_chat_template_rendering_nothing_gives_an_empty_prompt) {
  auto render = [](const std::string&, bool) { return std::string(); };
  expect_refused(builder(render).prepare(chat_request(R"({"messages":[]})")), "the prompt is empty",
                 "prompt");
}

TEST(prompt_builder, an_unknown_model_is_a_404_and_the_served_name_or_none_is_accepted) {
  auto r = text_request("Lily");
  r.model = "gpt-4";
  expect_refused(builder().prepare(r), "The model `gpt-4` does not exist.", "model", 404);
  r.model = "stories";
  EXPECT_TRUE(builder().prepare(r).ok());
  r.model = "";
  EXPECT_TRUE(builder().prepare(r).ok());
}

TEST(prompt_builder, truncate_prompt_tokens_keeps_the_last_k_tokens) {
  auto r = text_request("Lily was happy");  // 1 317 286 393
  r.params.truncate_prompt_tokens = 2;
  auto p = builder().prepare(r);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.token_ids, (ids{286, 393}));

  r.params.truncate_prompt_tokens = 10;  // longer than the prompt: nothing to cut
  p = builder().prepare(r);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.token_ids, (ids{1, 317, 286, 393}));
}

TEST(prompt_builder, truncation_comes_before_the_length_check) {
  ids long_prompt;
  for (int32_t i = 0; i < 20; ++i) long_prompt.push_back(100 + i);
  auto r = ids_request(long_prompt);
  r.params.truncate_prompt_tokens = 5;
  const auto p = builder().prepare(r);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.token_ids, (ids{115, 116, 117, 118, 119}));
}

TEST(prompt_builder, truncate_minus_one_keeps_max_model_len_tokens_which_leaves_no_room) {
  ids long_prompt;
  for (int32_t i = 0; i < 20; ++i) long_prompt.push_back(100 + i);
  auto r = ids_request(long_prompt);
  r.params.truncate_prompt_tokens = -1;
  expect_refused(builder().prepare(r),
                 "This model's maximum context length is 16 tokens. However, your prompt has 16 "
                 "tokens, leaving no room for completion. Please reduce the length of the prompt.",
                 "prompt");
}

TEST(prompt_builder, a_prompt_must_leave_room_for_one_token) {
  ids fifteen(15, 300), sixteen(16, 300);
  auto p = builder().prepare(ids_request(fifteen));
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.token_ids.size(), 15u);
  expect_refused(builder().prepare(ids_request(sixteen)),
                 "This model's maximum context length is 16 tokens. However, your prompt has 16 "
                 "tokens, leaving no room for completion. Please reduce the length of the prompt.",
                 "prompt");
}

TEST(prompt_builder, max_tokens_must_fit_beside_the_prompt) {
  auto r = ids_request(ids(10, 300));
  r.params.max_tokens = 6;  // 10 + 6 = 16: fits exactly
  EXPECT_TRUE(builder().prepare(r).ok());
  r.params.max_tokens = 7;
  expect_refused(builder().prepare(r),
                 "'max_tokens' is too large: 7. This model's maximum context length is 16 tokens "
                 "and your request has 10 input tokens (7 > 16 - 10).",
                 "max_tokens");
  r.params.max_tokens = -1;  // until the context is full
  EXPECT_TRUE(builder().prepare(r).ok());
}

TEST(prompt_builder, parameter_errors_come_before_prompt_errors) {
  auto r = ids_request({});
  r.params.n = 0;
  expect_refused(builder().prepare(r), "n must be between 1 and 128", "n");
}

struct bad_param {
  std::function<void(sampling_params&)> set;
  std::string error;
  std::string param;
};

TEST(prompt_builder, each_out_of_range_parameter_is_refused_by_name) {
  const std::vector<bad_param> cases = {
      {[](auto& p) { p.n = 0; }, "n must be between 1 and 128", "n"},
      {[](auto& p) { p.n = 129; }, "n must be between 1 and 128", "n"},
      {[](auto& p) { p.temperature = -0.5f; }, "temperature must be >= 0", "temperature"},
      {[](auto& p) { p.temperature = std::nanf(""); }, "temperature must be >= 0", "temperature"},
      {[](auto& p) { p.top_p = std::nanf(""); }, "top_p must be in (0, 1]", "top_p"},
      {[](auto& p) { p.top_p = 0.0f; }, "top_p must be in (0, 1]", "top_p"},
      {[](auto& p) { p.top_p = 1.5f; }, "top_p must be in (0, 1]", "top_p"},
      {[](auto& p) { p.top_k = -2; }, "top_k must be -1 or 0 (disabled) or at least 1", "top_k"},
      {[](auto& p) { p.min_p = -0.1f; }, "min_p must be in [0, 1]", "min_p"},
      {[](auto& p) { p.min_p = 1.1f; }, "min_p must be in [0, 1]", "min_p"},
      {[](auto& p) { p.presence_penalty = 2.5f; }, "presence_penalty must be in [-2, 2]",
       "presence_penalty"},
      {[](auto& p) { p.frequency_penalty = -2.5f; }, "frequency_penalty must be in [-2, 2]",
       "frequency_penalty"},
      {[](auto& p) { p.repetition_penalty = 0.0f; }, "repetition_penalty must be in (0, 2]",
       "repetition_penalty"},
      {[](auto& p) { p.repetition_penalty = 2.5f; }, "repetition_penalty must be in (0, 2]",
       "repetition_penalty"},
      {[](auto& p) { p.max_tokens = 0; }, "max_tokens must be at least 1", "max_tokens"},
      {[](auto& p) { p.max_tokens = -2; }, "max_tokens must be at least 1", "max_tokens"},
      {[](auto& p) { p.min_tokens = -1; }, "min_tokens must be in [0, max_tokens]", "min_tokens"},
      {[](auto& p) { p.max_tokens = 3, p.min_tokens = 4; }, "min_tokens must be in [0, max_tokens]",
       "min_tokens"},
      {[](auto& p) { p.logprobs = 21; },
       "logprobs must be at most 20 (the server's --max-logprobs)", "logprobs"},
      {[](auto& p) {
         p.logit_bias = {{5, 1.0f}, {512, -100.0f}};
       },
       "logit_bias names token 512, outside the vocabulary", "logit_bias"},
      {[](auto& p) {
         p.logit_bias = {{-1, 1.0f}};
       },
       "logit_bias names token -1, outside the vocabulary", "logit_bias"},
      {[](auto& p) {
         p.stop_token_ids = {2, 512};
       },
       "stop_token_ids names token 512, outside the vocabulary", "stop_token_ids"},
  };
  const auto b = builder();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.param + ": " + c.error);
    sampling_params p;
    c.set(p);
    expect_refused(b.validate_params(p), c.error, c.param);
    auto r = text_request("Lily");
    r.params = p;
    expect_refused(b.prepare(r), c.error, c.param);
  }
}

TEST(prompt_builder, max_logprobs_is_the_servers_setting) {
  const prompt_builder five(testing::stories_tokenizer(), {}, "stories", max_model_len, 5);
  sampling_params p;
  p.logprobs = 5;
  EXPECT_TRUE(five.validate_params(p).ok());
  p.logprobs = 6;
  expect_refused(five.validate_params(p),
                 "logprobs must be at most 5 (the server's --max-logprobs)", "logprobs");
  const prompt_builder wide(testing::stories_tokenizer(), {}, "stories", max_model_len, 100);
  p.logprobs = 100;
  EXPECT_TRUE(wide.validate_params(p).ok());
}

// stories260K's longest piece is well under 64 bytes, so 16 tokens never cover 16 KiB: such a
// text is refused before it is tokenized, with the same status and parameter as after.
TEST(prompt_builder, a_text_no_context_can_hold_is_refused_before_tokenizing) {
  const auto b = builder();
  auto huge = text_request(std::string(16 << 10, 'a'));
  const auto refused = b.prepare(huge);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.error.find("bytes of text, more than that many tokens can hold"),
            std::string::npos)
      << refused.error;
  EXPECT_EQ(refused.error_param, "prompt");
  EXPECT_EQ(refused.status, 400);
  // A text just long enough to fail after tokenizing still gets the token-count message.
  const auto tokenized = b.prepare(text_request(std::string(200, 'a')));
  EXPECT_NE(tokenized.error.find("your prompt has"), std::string::npos) << tokenized.error;
  EXPECT_NE(tokenized.error.find(" tokens, leaving no room"), std::string::npos);
  // A prompt that asks to be truncated may be of any length.
  huge.params.truncate_prompt_tokens = 4;
  EXPECT_TRUE(b.prepare(huge).ok());
  // Rendered chat text is held to the same bound.
  const auto chat = builder([](const std::string&, bool) { return std::string(16 << 10, 'b'); });
  EXPECT_NE(chat.prepare(chat_request(R"({"messages":[]})")).error.find("bytes of text"),
            std::string::npos);
}

TEST(prompt_builder, parameters_at_their_limits_are_accepted) {
  const std::vector<std::function<void(sampling_params&)>> cases = {
      [](auto& p) { p.n = 128; },
      [](auto& p) { p.temperature = 0.0f; },
      [](auto& p) { p.top_p = 1.0f; },
      [](auto& p) { p.top_k = -1; },
      [](auto& p) { p.top_k = 0; },  // 0 also means no limit
      [](auto& p) { p.top_k = 1; },
      [](auto& p) { p.min_p = 1.0f; },
      [](auto& p) { p.presence_penalty = -2.0f; },
      [](auto& p) { p.frequency_penalty = 2.0f; },
      [](auto& p) { p.repetition_penalty = 2.0f; },
      [](auto& p) { p.max_tokens = -1, p.min_tokens = 1000; },  // no max_tokens to exceed
      [](auto& p) { p.max_tokens = 4, p.min_tokens = 4; },
      [](auto& p) { p.logprobs = 20; },
      [](auto& p) {
        p.logit_bias = {{0, 5.0f}, {511, -5.0f}};
      },
      [](auto& p) {
        p.stop_token_ids = {0, 511};
      },
  };
  const auto b = builder();
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    sampling_params p;
    cases[i](p);
    const auto v = b.validate_params(p);
    EXPECT_TRUE(v.ok()) << v.error;
  }
}

}  // namespace
}  // namespace actorllm

namespace actorllm {
namespace {

generate_request chat_with_images(std::vector<std::string> urls) {
  generate_request r;
  r.kind = prompt_kind::chat;
  r.chat_json = R"({"messages": [{"role": "user", "content": "x"}]})";
  r.image_urls = std::move(urls);
  r.params.max_tokens = 1;
  return r;
}

prompt_image loaded(float value) {
  prompt_image image;
  image.channels = 3, image.height = image.width = 1;
  image.pixels.assign(3, value);
  image.num_tokens = 3;
  image.token_id = 317;
  image.key = pixels_key(image);
  return image;
}

TEST(prompt_builder_images, a_model_without_a_vision_tower_refuses_images_by_name) {
  const auto refused = builder([](const std::string&, bool) {
                         return "a";
                       }).prepare(chat_with_images({"data:image/png;base64,AAAA"}));
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.error_param, "messages");
  EXPECT_NE(refused.error.find("The model `stories` takes no images"), std::string::npos)
      << refused.error;
}

TEST(prompt_builder_images, placeholders_become_the_images_positions_within_the_context) {
  image_spec spec;
  spec.placeholder = "<image>";
  spec.image_token = " Lily";  // "▁Lily" (317) stands in for an image token
  spec.image_token_id = 317;
  auto images = std::make_shared<const image_pipeline>(
      spec, [](std::string_view) { return media::fetched_media{}; });
  const prompt_builder b(
      testing::stories_tokenizer(),
      [](const std::string&, bool) { return "was<image> was<image>"; }, "stories", max_model_len,
      20, nullptr, nullptr, images);
  const auto p = b.prepare(chat_with_images({"u0", "u1"}), {loaded(0.1f), loaded(0.2f)});
  ASSERT_TRUE(p.ok()) << p.error;
  ASSERT_EQ(p.images.size(), 2u);
  ASSERT_EQ(p.token_ids.size(), 1u + 3 + 1 + 3);  // "was Lily Lily Lily was Lily Lily Lily"
  EXPECT_EQ(p.token_ids[0], 286);
  EXPECT_EQ(p.images[0].offset, 1);
  EXPECT_EQ(p.images[1].offset, 5);
  EXPECT_LT(p.token_ids[1], 0);  // key tokens, not the image token
  EXPECT_EQ(p.token_ids[4], 286);

  // One image too few for the placeholders, and a prompt past the context once expanded.
  const auto mismatch = b.prepare(chat_with_images({"u0"}), {loaded(0.1f)});
  EXPECT_NE(mismatch.error.find("2 image placeholders for 1 image"), std::string::npos)
      << mismatch.error;
  const prompt_builder six(
      testing::stories_tokenizer(),
      [](const std::string&, bool) { return "<image><image><image><image><image><image>"; },
      "stories", max_model_len, 20, nullptr, nullptr, images);
  const auto too_long = six.prepare(chat_with_images({"1", "2", "3", "4", "5", "6"}),
                                    std::vector<prompt_image>(6, loaded(0.3f)));
  EXPECT_NE(too_long.error.find("maximum context length"), std::string::npos) << too_long.error;
  auto truncating = chat_with_images({"u0", "u1"});
  truncating.params.truncate_prompt_tokens = 4;
  EXPECT_EQ(b.prepare(truncating, {loaded(0.1f), loaded(0.2f)}).error_param,
            "truncate_prompt_tokens");
}

}  // namespace
}  // namespace actorllm

namespace actorllm {
namespace {

TEST(prompt_builder_images, more_images_than_the_context_holds_are_refused_before_loading) {
  image_spec spec;
  spec.placeholder = spec.image_token = "<image>";
  spec.tokens_per_image = 5;
  auto images = std::make_shared<const image_pipeline>(
      spec, [](std::string_view) { return media::fetched_media{}; });
  const prompt_builder b(
      testing::stories_tokenizer(), [](const std::string&, bool) { return "x"; }, "stories",
      max_model_len, 20, nullptr, nullptr, images);
  EXPECT_TRUE(b.check_takes_images(chat_with_images({"1", "2", "3"})).ok());  // 15 of 16
  const auto refused = b.check_takes_images(chat_with_images({"1", "2", "3", "4"}));
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.error.find("4 images fill 20 positions"), std::string::npos) << refused.error;
}

}  // namespace
}  // namespace actorllm
