// Integer arithmetic in templates overflows as an error, not as undefined behaviour or a
// SIGFPE (INT64_MIN // -1 traps on x86), and range() is bounded as in Jinja's sandbox, which
// Hugging Face renders chat templates in. Found by fuzz/jinja_fuzz.cpp.
#include <gtest/gtest.h>

#include <string>

#include "chat_template/chat_template.hpp"
#include "tests/chat_template/render_source.hpp"

namespace actorllm {
namespace {

TEST(jinja_integers, overflow_is_an_error_naming_it) {
  for (const char* source :
       {"{{ 2 ** 62 * 2 }}", "{{ 9223372036854775807 + 1 }}", "{{ -9223372036854775807 - 2 }}",
        "{{ 2 ** 64 }}", "{{ -(-9223372036854775807 - 1) }}",
        "{{ (-9223372036854775807 - 1) // -1 }}", "{{ (-9223372036854775807 - 1) | abs }}",
        "{{ [9223372036854775807, 1] | sum }}", "{{ 1e300 | int }}",
        "{{ 99999999999999999999 }}"}) {
    const auto r = testing::render_source(source);
    EXPECT_FALSE(r.ok()) << source << " gave " << r.text;
    EXPECT_NE(r.error.find("overflow"), std::string::npos) << source << ": " << r.error;
  }
}

TEST(jinja_integers, exact_results_near_the_limits_stay_exact) {
  EXPECT_EQ(testing::render_source("{{ 2 ** 62 + (2 ** 62 - 1) }}").text, "9223372036854775807");
  EXPECT_EQ(testing::render_source("{{ 3 ** 39 }}").text, "4052555153018976267");
  EXPECT_EQ(
      testing::render_source("{{ 1 ** 999999999999 }},{{ (-1) ** 999999999999 }},{{ 0 ** 0 }}")
          .text,
      "1,-1,1");
  EXPECT_EQ(testing::render_source("{{ -7 // 2 }},{{ -7 % 2 }},{{ 7 % -2 }}").text, "-4,1,-1");
  EXPECT_EQ(testing::render_source("{{ (-9223372036854775807 - 1) % -1 }}").text, "0");
  EXPECT_EQ(testing::render_source("{{ (-9223372036854775807 - 1) // 1 }}").text,
            "-9223372036854775808");
  EXPECT_EQ(testing::render_source("{{ [1, 2, 3][0:3:9223372036854775807] }}").text, "[1]");
  EXPECT_EQ(testing::render_source("{{ [1, 2, 3][::-9223372036854775807] }}").text, "[3]");
}

TEST(jinja_integers, range_is_bounded_as_in_the_sandbox) {
  EXPECT_EQ(testing::render_source("{{ range(100000) | length }}").text, "100000");
  EXPECT_EQ(
      testing::render_source("{{ range(9223372036854775806, 9223372036854775807, 5) | list }}")
          .text,
      "[9223372036854775806]");
  for (const char* source : {"{{ range(100001) | length }}",
                             "{{ range(-9223372036854775807, 9223372036854775807) | length }}"}) {
    const auto r = testing::render_source(source);
    EXPECT_FALSE(r.ok()) << source;
    EXPECT_NE(r.error.find("range too big"), std::string::npos) << source << ": " << r.error;
  }
}

}  // namespace
}  // namespace actorllm
