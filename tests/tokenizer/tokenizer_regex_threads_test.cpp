// Threads that encode and then end leave nothing behind: each thread's PCRE2 match block is
// freed with the thread (it was allocated per thread and never freed; a server whose actor
// threads come and go leaked one per thread). LeakSanitizer checks this in the asan preset
// (scripts/sanitize.sh), where the leak fails this test at exit.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "tests/support/test_data.hpp"
#include "tokenizer/tokenizer.hpp"

namespace actorllm {
namespace {

TEST(tokenizer_regex_threads, encoding_threads_that_end_free_their_match_blocks) {
  const tokenizer tok = tokenizer::load(testing::shared_dir() / "tokenizers" / "llama3");
  const std::vector<int32_t> expected = tok.encode("Hello, world! 123 ok", false);
  std::vector<std::thread> threads;
  std::vector<std::vector<int32_t>> got(4);
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] { got[i] = tok.encode("Hello, world! 123 ok", false); });
  }
  for (auto& t : threads) t.join();
  for (const auto& ids : got) EXPECT_EQ(ids, expected);
}

}  // namespace
}  // namespace actorllm
