// Chat templates against python3-jinja2 configured as Hugging Face does: the expected
// outputs in tests/data/chat/ come from scripts/render_chat_reference.py.
#include "chat_template/chat_template.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "chat_template/jinja_value.hpp"
#include "tests/support/test_data.hpp"

namespace actorllm {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

fs::path chat_data_dir() {
  return fs::path(ACTORLLM_SOURCE_DIR) / "tests" / "data" / "chat";
}

ordered_json read_json(const fs::path& p) {
  std::ifstream in(p);
  EXPECT_TRUE(in.good()) << p;
  return ordered_json::parse(in);
}

TEST(chat_template, real_templates_match_jinja2) {
  auto conversations = read_json(chat_data_dir() / "conversations.json");
  auto expected = read_json(chat_data_dir() / "expected.json");
  ASSERT_EQ(expected.size(), 8u);
  for (const auto& [name, spec] : expected.items()) {
    auto tmpl = chat_template::load(testing::shared_dir() / spec["path"].get<std::string>());
    for (const auto& c : spec["cases"]) {
      const auto& conv = conversations[c["conversation"].get<std::string>()];
      ordered_json vars = {{"messages", conv["messages"]},
                           {"add_generation_prompt", c["add_generation_prompt"]}};
      if (conv.contains("tools")) vars["tools"] = conv["tools"];
      for (const char* key : {"bos_token", "eos_token"})
        if (spec[key].is_string()) vars[key] = spec[key];
      auto r = tmpl.render(vars);
      std::string label = name + " / " + c["conversation"].get<std::string>() +
                          (c["add_generation_prompt"].get<bool>() ? " +gen" : "");
      if (c.contains("text")) {
        EXPECT_TRUE(r.ok()) << label << ": " << r.error;
        EXPECT_EQ(r.text, c["text"].get<std::string>()) << label;
      } else {
        EXPECT_FALSE(r.ok()) << label << " should fail like jinja2: " << c["error"];
      }
    }
  }
}

TEST(chat_template, features_match_jinja2) {
  auto features = read_json(chat_data_dir() / "features.json");
  ASSERT_GE(features.size(), 10u);
  for (const auto& [name, f] : features.items()) {
    chat_template tmpl(f["source"].get<std::string>());
    auto r = tmpl.render(f["variables"]);
    if (f.contains("text")) {
      EXPECT_TRUE(r.ok()) << name << ": " << r.error;
      EXPECT_EQ(r.text, f["text"].get<std::string>()) << name;
    } else {
      EXPECT_FALSE(r.ok()) << name;
    }
  }
}

TEST(chat_template, raise_exception_message_comes_back) {
  chat_template tmpl("line one\n{{ raise_exception('roles must alternate') }}");
  auto r = tmpl.render(ordered_json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("roles must alternate"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("line 2"), std::string::npos) << r.error;
}

TEST(chat_template, unsupported_construct_names_the_line) {
  try {
    chat_template tmpl("ok\n\n{% call foo() %}x{% endcall %}");
    FAIL() << "parsed an unsupported statement";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("call"), std::string::npos) << e.what();
  }
  EXPECT_THROW(chat_template("{{ x | "), std::runtime_error);
  EXPECT_THROW(chat_template("{% if x %}no end"), std::runtime_error);
  auto r = chat_template("\n{{ x | no_such_filter }}").render(ordered_json{{"x", 1}});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("line 2"), std::string::npos) << r.error;
}

// Found by fuzz_jinja: bytes that are not UTF-8 in a template literal reached
// lower(), whose ICU conversion threw past render()'s error reporting.
TEST(chat_template, template_that_is_not_utf8_is_refused_when_parsed) {
  EXPECT_THROW(chat_template("{{ 'A\xC3'.lower() }}"), jinja::error);
  EXPECT_THROW(chat_template("{{ x }}\xFF"), jinja::error);
  auto r = chat_template("{{ '\xC3\x89t\xC3\xA9'.lower() }}{{ 'x' is lower }}")
               .render(ordered_json::object());
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.text, "\xC3\xA9t\xC3\xA9True");
}

// Found by fuzz_jinja: a filter's default argument was a temporary that the argument lookup
// returned by reference (ASan: stack-use-after-scope in the sanitizer build).
TEST(chat_template, filters_without_their_optional_arguments) {
  auto r = chat_template("[{{ missing | default }}][{{ ['a', 'b'] | join }}][{{ 'x' | d }}]")
               .render(ordered_json::object());
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.text, "[][ab][x]");
}

TEST(chat_template, tokenizer_config_supplies_special_tokens) {
  auto tmpl =
      chat_template::load(testing::shared_dir() / "tokenizers/llama3/tokenizer_config.json");
  EXPECT_EQ(tmpl.default_bos_token(), "<|begin_of_text|>");
  ordered_json vars = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  auto r = tmpl.render(vars);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.text.rfind("<|begin_of_text|><|start_header_id|>user", 0), 0u) << r.text;
}

}  // namespace
}  // namespace actorllm

namespace actorllm {
namespace {

TEST(chat_template, templates_that_iterate_content_parts_are_told_apart) {
  // vLLM's "openai" content format: a loop over, or a filter of, a message's content.
  for (const char* source :
       {"{% for m in messages %}{% for part in m['content'] %}{{ part.text }}{% endfor %}{% endfor "
        "%}",
        "{% for m in messages %}{% for c in m.content | selectattr('type', 'equalto', 'text') %}"
        "{{ c.text }}{% endfor %}{% endfor %}",
        "{% for message in messages %}{% for content in message['content'] | selectattr('type', "
        "'equalto', 'image') %}<image>{% endfor %}{% endfor %}"})
    EXPECT_TRUE(chat_template(source).iterates_content_parts()) << source;
  for (const char* source : {"{% for m in messages %}{{ m['content'] | trim }}{% endfor %}",
                             "{% for m in messages %}{{ m.content }}{% endfor %}"})
    EXPECT_FALSE(chat_template(source).iterates_content_parts()) << source;
  // Every text model's template of ../shared takes string content.
  for (const char* name :
       {"Qwen-Qwen2.5-7B-Instruct.jinja", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
        "google-gemma-2-2b-it.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja",
        "microsoft-Phi-3.5-mini-instruct.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja"})
    EXPECT_FALSE(chat_template::load(testing::shared_dir() / "chat-templates" / name)
                     .iterates_content_parts())
        << name;
}

}  // namespace
}  // namespace actorllm
