// The flags of images in prompts: vLLM's --limit-mm-per-prompt, --allowed-local-media-path and
// --allowed-media-domains, and ours for the fetch's time and size; bad values are one line each.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "config/engine_flags.hpp"
#include "tests/config/serve_flags.hpp"

namespace actorllm {
namespace {

std::optional<std::string> parse_media_flags(engine_config& c, std::vector<std::string> args) {
  args.insert(args.begin(), "m");
  return testing::parse_serve_flags(c, std::move(args));
}

TEST(media_config, defaults_are_vllms) {
  const server_config s;
  EXPECT_EQ(s.max_images_per_prompt, 999);
  EXPECT_TRUE(s.media.allowed_domains.empty());     // any host
  EXPECT_TRUE(s.media.allowed_local_path.empty());  // no file:// URL
  EXPECT_EQ(s.media.timeout, std::chrono::seconds(5));
  EXPECT_EQ(s.media.max_bytes, size_t{20} << 20);
}

TEST(media_config, the_flags_parse_into_the_policy) {
  const auto folder = std::filesystem::temp_directory_path();
  engine_config c;
  EXPECT_FALSE(parse_media_flags(
      c, {"--limit-mm-per-prompt", R"({"image": 4, "video": 0})", "--allowed-local-media-path",
          folder.string(), "--allowed-media-domains", "Example.com,cdn.b.org", "upload.c.net",
          "--media-fetch-timeout", "2.5", "--max-image-bytes", "1048576"}));
  EXPECT_EQ(c.server.max_images_per_prompt, 4);
  EXPECT_EQ(c.server.media.allowed_local_path, folder);
  EXPECT_EQ(c.server.media.allowed_domains,
            (std::vector<std::string>{"example.com", "cdn.b.org", "upload.c.net"}));
  EXPECT_EQ(c.server.media.timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(c.server.media.max_bytes, 1048576u);
  EXPECT_TRUE(c.validate().empty()) << c.validate().front();

  // vLLM's form with profiling options: the count is what is kept.
  EXPECT_FALSE(parse_media_flags(
      c, {"--limit-mm-per-prompt", R"({"image": {"count": 2, "width": 512, "height": 512}})"}));
  EXPECT_EQ(c.server.max_images_per_prompt, 2);
}

TEST(media_config, bad_values_are_one_clear_line) {
  const std::pair<std::vector<std::string>, const char*> refused[] = {
      {{"--limit-mm-per-prompt", "4"}, "--limit-mm-per-prompt: must be a JSON object"},
      {{"--limit-mm-per-prompt", R"({"image": -1})"},
       "--limit-mm-per-prompt: image: the count must be a whole number >= 0"},
      {{"--limit-mm-per-prompt", R"({"image": {"width": 5}})"},
       "--limit-mm-per-prompt: image needs a count"},
      {{"--allowed-media-domains", "https://a.com"},
       "--allowed-media-domains: 'https://a.com' is not a host name"},
      {{"--media-fetch-timeout", "soon"}, "--media-fetch-timeout"},
      {{"--max-image-bytes", "lots"}, "--max-image-bytes"},
  };
  for (const auto& [args, words] : refused) {
    engine_config c;
    const auto error = parse_media_flags(c, args);
    ASSERT_TRUE(error) << args[0];
    EXPECT_EQ(error->rfind(words, 0), 0u) << *error;
  }

  const std::pair<std::vector<std::string>, const char*> invalid[] = {
      {{"--media-fetch-timeout", "0"}, "--media-fetch-timeout: must be in (0, 3600] seconds"},
      {{"--media-fetch-timeout", "7200"}, "--media-fetch-timeout: must be in (0, 3600] seconds"},
      {{"--max-image-bytes", "0"}, "--max-image-bytes: must be in [1, 1073741824] (1 GiB)"},
      {{"--allowed-local-media-path", "relative/dir"},
       "--allowed-local-media-path: 'relative/dir' must be an absolute path to a folder that "
       "exists"},
      {{"--allowed-local-media-path", "/no/such/folder/here"},
       "--allowed-local-media-path: '/no/such/folder/here' must be an absolute path to a "
       "folder that exists"},
  };
  for (const auto& [args, line] : invalid) {
    engine_config c;
    EXPECT_FALSE(parse_media_flags(c, args)) << args[0];
    EXPECT_EQ(c.validate(), std::vector<std::string>{line}) << args[0];
  }
  engine_config none;
  EXPECT_FALSE(parse_media_flags(none, {"--limit-mm-per-prompt", R"({"image": 0})"}));
  EXPECT_EQ(none.server.max_images_per_prompt, 0);  // images refused
  EXPECT_TRUE(none.validate().empty());
}

}  // namespace
}  // namespace actorllm
