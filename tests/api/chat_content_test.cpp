// Chat content parts: text joined as before when a request has no image; with images, parts
// kept as the list vision templates read and the URLs carried beside in order; every other
// kind of part refused by name; the server's bounds on images.
#include "api/chat_content.hpp"

#include <gtest/gtest.h>

#include <string>

#include "api/openai_protocol.hpp"

namespace actorllm::api {
namespace {

using json = nlohmann::json;

generate_request chat_of(const std::string& messages) {
  openai_request out;
  const std::string body = R"({"messages":)" + messages + "}";
  auto error = parse_openai_request(body, api_kind::chat, out);
  EXPECT_FALSE(error) << body << " -> " << (error ? error->message : "");
  return out.prompts.empty() ? generate_request{} : out.prompts[0];
}

api_error chat_error(const std::string& messages) {
  openai_request out;
  auto error = parse_openai_request(R"({"messages":)" + messages + "}", api_kind::chat, out);
  EXPECT_TRUE(error) << messages;
  return error.value_or(api_error{});
}

TEST(chat_content, text_parts_without_images_are_joined_as_before) {
  const auto g = chat_of(
      R"([{"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
          {"role":"user","content":"c"}])");
  const auto chat = json::parse(g.chat_json);
  EXPECT_EQ(chat["messages"][0]["content"], "a\nb");
  EXPECT_EQ(chat["messages"][1]["content"], "c");
  EXPECT_TRUE(g.image_urls.empty());
}

TEST(chat_content, image_parts_stay_parts_and_their_urls_go_beside_in_order) {
  const auto g = chat_of(R"([
      {"role":"system","content":[{"type":"text","text":"rules"}]},
      {"role":"user","content":[{"type":"text","text":"what is"},
        {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}},
        {"type":"text","text":"and"},
        {"type":"image_url","image_url":"https://example.com/b.jpg"}]},
      {"role":"assistant","content":"two things"},
      {"role":"user","content":[{"type":"image_url","image_url":{"url":"file:///m/c.png"}}]}])");
  const auto chat = json::parse(g.chat_json);
  EXPECT_EQ(g.image_urls,
            (std::vector<std::string>{"data:image/png;base64,AAAA", "https://example.com/b.jpg",
                                      "file:///m/c.png"}));
  // Every list of parts stays a list in a request with images; text stays text.
  EXPECT_EQ(chat["messages"][0]["content"], json::parse(R"([{"type":"text","text":"rules"}])"));
  EXPECT_EQ(chat["messages"][1]["content"],
            json::parse(R"([{"type":"text","text":"what is"},{"type":"image"},
                            {"type":"text","text":"and"},{"type":"image"}])"));
  EXPECT_EQ(chat["messages"][2]["content"], "two things");
  EXPECT_EQ(chat["messages"][3]["content"], json::parse(R"([{"type":"image"}])"));
  // The URLs travel beside the chat, not inside it.
  EXPECT_EQ(g.chat_json.find("base64"), std::string::npos);
}

TEST(chat_content, the_tokenizer_endpoint_reads_images_the_same_way) {
  generate_request g;
  ASSERT_FALSE(parse_tokenize_request(
      R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":"data:x"}]}]})",
      g));
  EXPECT_EQ(g.image_urls, std::vector<std::string>{"data:x"});
  EXPECT_EQ(json::parse(g.chat_json)["messages"][0]["content"][0]["type"], "image");
}

TEST(chat_content, bad_image_parts_are_refused_naming_what_is_wrong) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type":"image_url"})", "needs image_url"},
      {R"({"type":"image_url","image_url":{}})", "image_url.url"},
      {R"({"type":"image_url","image_url":{"url":""}})", "must not be empty"},
      {R"({"type":"image_url","image_url":{"url":5}})", "image_url.url"},
      {R"({"type":"image_url","image_url":""})", "must not be empty"},
      {R"({"type":"image_url","image_url":{"url":"ftp://h/x.png"}})", "'ftp://h/x.png'"},
      {R"({"type":"image_url","image_url":{"url":"data:x","detail":"max"}})", "detail"},
      {R"({"type":"input_audio","input_audio":{"data":"AA","format":"wav"}})", "'input_audio'"},
      {R"({"type":"video_url","video_url":{"url":"https://h/v.mp4"}})", "'video_url'"},
      {R"({"type":"file","file":{"file_id":"f"}})", "'file'"},
      {R"({"type":"refusal","refusal":"no"})", "unknown content part type 'refusal'"},
      {R"({"type":"text","text":5})", "text"},
      {R"({"text":"x"})", "type"},
  };
  for (const auto& [part, words] : cases) {
    const auto error = chat_error(std::string(R"([{"role":"user","content":[)") + part + "]}]");
    EXPECT_EQ(error.status, 400) << part;
    EXPECT_EQ(error.param, "messages") << part;
    EXPECT_NE(error.message.find(words), std::string::npos) << part << ": " << error.message;
  }
}

TEST(chat_content, the_servers_bounds_on_images) {
  generate_request prompt;
  prompt.image_urls = {"data:a", "data:b", "data:c"};
  media_policy policy;
  EXPECT_FALSE(check_image_limits(prompt, 3, policy, "messages"));
  auto error = check_image_limits(prompt, 2, policy, "input");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, 400);
  EXPECT_EQ(error->param, "input");
  EXPECT_NE(error->message.find("At most 2 image(s)"), std::string::npos) << error->message;
  EXPECT_NE(error->message.find("--limit-mm-per-prompt"), std::string::npos);
  EXPECT_TRUE(check_image_limits(prompt, 0, policy, "messages"));

  // A data: URL as long as max_bytes of base64 takes passes; one byte more of URL does not.
  policy.max_bytes = 30;
  prompt.image_urls = {std::string(policy.max_url_bytes(), 'x')};
  EXPECT_FALSE(check_image_limits(prompt, 3, policy, "messages"));
  prompt.image_urls[0] += 'x';
  error = check_image_limits(prompt, 3, policy, "messages");
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("--max-image-bytes (30)"), std::string::npos) << error->message;
  EXPECT_GE(policy.max_url_bytes(), std::string("data:image/webp;base64,").size() + 40);
}

}  // namespace
}  // namespace actorllm::api
