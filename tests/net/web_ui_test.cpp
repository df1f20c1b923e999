// The web playground as the server hands it out: GET / is web/index.html and /ui/{name} every
// other file of web/, byte for byte as committed, with its type and ETag (304 on a match);
// no API key is needed for them (the page asks for it), while /v1/engine/stats needs it;
// --disable-web-ui takes them away; names outside web/ are 404s.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "net/web_assets.hpp"
#include "tests/net/server_fixture.hpp"
#include "tests/net/test_client.hpp"

namespace actorllm::testing {
namespace {

namespace fs = std::filesystem;

class web_ui_test : public server_fixture {
 protected:
  void SetUp() override {}
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(web_assets, the_binary_holds_every_file_of_web_as_committed) {
  const fs::path web = fs::path(ACTORLLM_SOURCE_DIR) / "web";
  ASSERT_TRUE(fs::exists(web / "index.html")) << web;
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(web)) {
    if (!entry.is_regular_file()) continue;
    ++files;
    const std::string name = fs::relative(entry.path(), web).generic_string();
    const net::web_asset* asset = net::find_web_asset(name);
    ASSERT_NE(asset, nullptr) << name << " is not compiled in";
    EXPECT_EQ(asset->body, read_file(entry.path())) << name;
    EXPECT_EQ(asset->etag.front(), '"');
  }
  EXPECT_EQ(net::web_assets_table().size(), files);
  EXPECT_EQ(net::find_web_asset("index.html")->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(net::find_web_asset("nothing.js"), nullptr);
}

TEST_F(web_ui_test, the_page_and_its_files_are_served_without_the_api_key) {
  server_config config;
  config.api_key = "k";
  start(config);
  const auto page = get(port_, "/");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.body, net::find_web_asset("index.html")->body);
  EXPECT_EQ(page.header("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(page.header("content-security-policy").find("default-src 'self'"), std::string::npos);
  for (const auto& asset : net::web_assets_table()) {
    const auto file = get(port_, "/ui/" + std::string(asset.name));
    EXPECT_EQ(file.status, 200) << asset.name;
    EXPECT_EQ(file.body, asset.body) << asset.name;
    EXPECT_EQ(file.header("content-type"), asset.content_type) << asset.name;
    EXPECT_EQ(file.header("etag"), asset.etag) << asset.name;
    EXPECT_EQ(file.header("x-content-type-options"), "nosniff");
  }
  // The browser's copy is still good: 304 and no body.
  const auto again = get(port_, "/", {{"If-None-Match", std::string(page.header("etag"))}});
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());
  // Not files of web/: 404 (with the key: without it, an unknown path is a 401).
  for (const char* path : {"/ui/../CMakeLists.txt", "/ui/", "/ui/nothing.js", "/ui/%2e%2e/x"})
    EXPECT_EQ(get(port_, path, {{"Authorization", "Bearer k"}}).status, 404) << path;
  EXPECT_EQ(post(port_, "/", "{}").status, 405);
}

TEST_F(web_ui_test, engine_stats_needs_the_api_key) {
  server_config config;
  config.api_key = "k";
  start(config);
  EXPECT_EQ(get(port_, "/v1/engine/stats").status, 401);
  const auto stats = get(port_, "/v1/engine/stats", {{"Authorization", "Bearer k"}});
  EXPECT_EQ(stats.status, 200);
  EXPECT_EQ(stats.body, engine_.engine_stats_json());
  EXPECT_EQ(stats.header("content-type"), "application/json");
}

TEST_F(web_ui_test, disable_web_ui_takes_the_page_away) {
  server_config config;
  config.enable_web_ui = false;
  start(config);
  EXPECT_EQ(get(port_, "/").status, 404);
  EXPECT_EQ(get(port_, "/ui/app.js").status, 404);
  EXPECT_EQ(get(port_, "/v1/engine/stats").status, 200) << "the API stays";
}

}  // namespace
}  // namespace actorllm::testing
