// api::response_store without a server: the LRU and byte bounds, ids, the folder it writes
// through to and reads back after a restart, and files it must not trust.
#include "api/response_store.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api/ids.hpp"
#include "api/response_folder.hpp"

namespace actorllm::api {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

stored_response entry(const std::string& id, const std::string& text = "hello",
                      const std::string& status = "completed") {
  return {
      {{"id", id},
       {"object", "response"},
       {"status", status},
       {"output",
        json::array({{{"id", "msg_1"},
                      {"type", "message"},
                      {"role", "assistant"},
                      {"content", json::array({{{"type", "output_text"}, {"text", text}}})}}})}},
      json::array({{{"id", "msg_0"},
                    {"type", "message"},
                    {"role", "user"},
                    {"content", json::array({{{"type", "input_text"}, {"text", "hi"}}})}}})};
}

/// A fresh folder under the system's temporary folder, removed at the end of the test.
class temporary_folder {
 public:
  temporary_folder() {
    std::random_device seed;
    path_ = fs::temp_directory_path() / ("response_store_test_" + std::to_string(seed()));
    fs::create_directories(path_);
  }
  ~temporary_folder() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
  }

 private:
  fs::path path_;
};

TEST(response_store, ids_are_resp_and_safe_characters) {
  EXPECT_TRUE(valid_response_id("resp_0123abcdef"));
  EXPECT_TRUE(valid_response_id("resp_A-b_9"));
  for (const char* bad : {"", "resp_", "resp_../../etc/passwd", "resp_a/b", "resp_a.json",
                          "resp_a b", "msg_123", "RESP_1", "resp_%2e%2e"})
    EXPECT_FALSE(valid_response_id(bad)) << bad;
  EXPECT_FALSE(valid_response_id("resp_" + std::string(65, 'a')));
  EXPECT_TRUE(valid_response_id("resp_" + std::string(64, 'a')));
  const std::string made = unguessable_id("resp_");  // what the server gives its responses
  EXPECT_TRUE(valid_response_id(made)) << made;
  EXPECT_EQ(made.size(), 5u + 32u);
  EXPECT_NE(made, unguessable_id("resp_"));

  response_store store({});
  EXPECT_FALSE(store.put(entry("resp_../x")));
  EXPECT_FALSE(store.get("../resp_x").has_value());
  EXPECT_EQ(store.size(), 0u);
}

TEST(response_store, the_least_recently_used_goes_first) {
  response_store store({.max_items = 2});
  ASSERT_TRUE(store.put(entry("resp_a")));
  ASSERT_TRUE(store.put(entry("resp_b")));
  ASSERT_TRUE(store.get("resp_a"));  // a is now used more recently than b
  ASSERT_TRUE(store.put(entry("resp_c")));
  EXPECT_TRUE(store.get("resp_a"));
  EXPECT_FALSE(store.get("resp_b"));
  EXPECT_TRUE(store.get("resp_c"));
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.get("resp_c")->response["output"][0]["content"][0]["text"], "hello");
}

TEST(response_store, the_byte_bound_holds_and_a_replacement_counts_once) {
  const int64_t one = stored_size(entry("resp_a"));
  response_store store({.max_items = 100, .max_bytes = 2 * one + one / 2});
  ASSERT_TRUE(store.put(entry("resp_a")));
  ASSERT_TRUE(store.put(entry("resp_b")));
  ASSERT_TRUE(store.put(entry("resp_b")));  // replaced, not added
  EXPECT_EQ(store.bytes(), 2 * one);
  ASSERT_TRUE(store.put(entry("resp_c")));  // a must go to make room
  EXPECT_FALSE(store.get("resp_a"));
  EXPECT_EQ(store.size(), 2u);
  EXPECT_LE(store.bytes(), 2 * one + one / 2);

  // One entry larger than the whole bound is not kept, and what it replaced is gone too.
  EXPECT_FALSE(store.put(entry("resp_b", std::string(4 * one, 'x'))));
  EXPECT_FALSE(store.get("resp_b"));
  EXPECT_TRUE(store.get("resp_c"));

  response_store none({.max_items = 0});
  EXPECT_FALSE(none.put(entry("resp_a")));
}

TEST(response_store, erase_forgets) {
  response_store store({});
  ASSERT_TRUE(store.put(entry("resp_a")));
  EXPECT_TRUE(store.erase("resp_a"));
  EXPECT_FALSE(store.erase("resp_a"));
  EXPECT_FALSE(store.get("resp_a"));
  EXPECT_EQ(store.bytes(), 0);
}

TEST(response_store, a_folder_keeps_the_responses_across_a_restart) {
  temporary_folder folder;
  {
    response_store store({.max_items = 10});
    ASSERT_FALSE(store.attach_folder(folder.path().string()));
    ASSERT_TRUE(store.put(entry("resp_a", "first")));
    ASSERT_TRUE(store.put(entry("resp_b", "second")));
    ASSERT_TRUE(store.put(entry("resp_c", "third")));
    EXPECT_TRUE(store.erase("resp_b"));
  }
  EXPECT_TRUE(fs::exists(folder.path() / "resp_a.json"));
  EXPECT_FALSE(fs::exists(folder.path() / "resp_b.json"));

  std::vector<std::string> warnings;
  response_store again({.max_items = 10}, [&](const std::string& w) { warnings.push_back(w); });
  ASSERT_FALSE(again.attach_folder(folder.path().string()));
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(again.size(), 2u);
  const auto a = again.get("resp_a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->response, entry("resp_a", "first").response);
  EXPECT_EQ(a->input_items, entry("resp_a").input_items);
  EXPECT_FALSE(again.get("resp_b"));
  EXPECT_TRUE(again.get("resp_c"));
}

TEST(response_store, a_smaller_bound_at_restart_keeps_the_newest_files) {
  temporary_folder folder;
  {
    response_store store({});
    ASSERT_FALSE(store.attach_folder(folder.path().string()));
    for (const char* id : {"resp_1", "resp_2", "resp_3"}) {
      ASSERT_TRUE(store.put(entry(id)));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // distinct write times
    }
  }
  response_store store({.max_items = 2});
  ASSERT_FALSE(store.attach_folder(folder.path().string()));
  EXPECT_FALSE(store.get("resp_1"));
  EXPECT_TRUE(store.get("resp_2"));
  EXPECT_TRUE(store.get("resp_3"));
  EXPECT_FALSE(fs::exists(folder.path() / "resp_1.json"));  // evicted, as the store would
}

TEST(response_store, files_that_cannot_be_trusted_are_skipped_with_a_warning) {
  temporary_folder folder;
  {
    response_store store({});
    ASSERT_FALSE(store.attach_folder(folder.path().string()));
    ASSERT_TRUE(store.put(entry("resp_good")));
  }
  folder.write("resp_garbage.json", "{\"response\": {\"id\": \"resp_gar");
  folder.write("resp_array.json", "[1, 2, 3]");
  folder.write("resp_other.json",
               json{{"response", entry("resp_good").response}, {"input_items", json::array()}}
                   .dump());  // the id is not the file's name
  folder.write(
      "resp_items.json",
      json{{"response", entry("resp_items").response}, {"input_items", json::array({1})}}.dump());
  folder.write("resp_deep.json", std::string(10000, '[') + std::string(10000, ']'));
  folder.write("resp_huge.json", std::string(1 << 16, ' '));
  folder.write("notes.txt", "not ours");
  folder.write("resp_bad..json", "{}");
  fs::create_symlink("/etc/passwd", folder.path() / "resp_link.json");

  std::vector<std::string> warnings;
  response_store store({.max_items = 100, .max_bytes = 1 << 15},
                       [&](const std::string& w) { warnings.push_back(w); });
  ASSERT_FALSE(store.attach_folder(folder.path().string()));
  EXPECT_EQ(store.size(), 1u);
  EXPECT_TRUE(store.get("resp_good"));
  // garbage, array, other, items, deep, huge and the link: one warning each.
  EXPECT_EQ(warnings.size(), 7u);
  for (const auto& w : warnings) EXPECT_NE(w.find("skipped"), std::string::npos) << w;
}

TEST(response_store, writes_follow_no_link_and_are_private) {
  temporary_folder folder, outside;
  outside.write("victim", "keep me");
  // A link where the store writes its temporary file, and one in place of a response's file.
  fs::create_symlink(outside.path() / "victim", folder.path() / ".resp_a.tmp");
  fs::create_symlink(outside.path() / "victim", folder.path() / "resp_b.json");
  response_store store({});
  ASSERT_FALSE(store.attach_folder(folder.path().string()));
  ASSERT_TRUE(store.put(entry("resp_a")));
  ASSERT_TRUE(store.put(entry("resp_b")));
  std::ifstream victim(outside.path() / "victim");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(victim), {}), "keep me");
  const fs::path file = folder.path() / "resp_b.json";
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(file)));  // the link itself was replaced
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
}

TEST(response_store, a_store_that_keeps_nothing_leaves_its_folder_alone) {
  temporary_folder folder;
  {
    response_store store({});
    ASSERT_FALSE(store.attach_folder(folder.path().string()));
    ASSERT_TRUE(store.put(entry("resp_a")));
  }
  response_store none({.max_items = 0});
  ASSERT_FALSE(none.attach_folder(folder.path().string()));
  EXPECT_EQ(none.size(), 0u);
  EXPECT_TRUE(fs::exists(folder.path() / "resp_a.json"));
}

TEST(response_store, a_response_that_was_running_comes_back_failed) {
  std::string why;
  const auto back =
      parse_stored_response(json{{"response", entry("resp_r", "", "in_progress").response},
                                 {"input_items", json::array()}}
                                .dump(),
                            "resp_r", why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->response["status"], "failed");
  EXPECT_EQ(back->response["error"]["code"], "server_error");
}

TEST(response_store, a_folder_that_cannot_be_made_is_refused) {
  temporary_folder folder;
  folder.write("file", "x");
  response_store store({});
  EXPECT_TRUE(store.attach_folder((folder.path() / "file").string()));
}

TEST(response_store, sessions_on_several_threads_share_it) {
  response_store store({.max_items = 50});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&store, t] {
      for (int i = 0; i < 20000; ++i) {
        const std::string id = "resp_" + std::to_string(t) + "_" + std::to_string(i % 80);
        store.put(entry(id));
        for (int other = 0; other < 4; ++other)  // what the other threads put
          store.get("resp_" + std::to_string(other) + "_" + std::to_string(i % 80));
        if (i % 7 == 0) store.erase(id);
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_LE(store.size(), 50u);
  int64_t total = 0;
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 80; ++i)
      if (auto e = store.get("resp_" + std::to_string(t) + "_" + std::to_string(i)))
        total += stored_size(*e);
  EXPECT_EQ(total, store.bytes());
}

}  // namespace
}  // namespace actorllm::api
