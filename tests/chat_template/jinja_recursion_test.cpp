// A macro that calls itself without end is an error naming it, not a stack overflow (a
// template comes from a model folder or a client). Found by fuzz/jinja_fuzz.cpp; a bounded
// recursion, as a tool schema's nesting renders, still works.
#include <gtest/gtest.h>

#include <string>

#include "chat_template/chat_template.hpp"
#include "tests/chat_template/render_source.hpp"

namespace actorllm {
namespace {

TEST(jinja_recursion, a_macro_that_calls_itself_forever_is_an_error_naming_it) {
  const auto r = testing::render_source(
      "{% macro greet(name) %}{{ greet(name) }}{% endmacro %}{{ greet('A') }}");
  EXPECT_FALSE(r.ok()) << r.text;
  EXPECT_NE(r.error.find("macro 'greet' nests more than 100"), std::string::npos) << r.error;
}

TEST(jinja_recursion, bounded_recursion_renders_and_the_depth_comes_back) {
  const std::string countdown =
      "{% macro down(n) %}{{ n }}{% if n > 0 %}{{ down(n - 1) }}{% endif %}{% endmacro %}";
  const auto r = testing::render_source(countdown + "{{ down(90) }}|{{ down(90) }}");
  // Two 91-deep calls in a row: each gives its depth back, so the second is not refused.
  std::string down;
  for (int n = 90; n >= 0; --n) down += std::to_string(n);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.text, down + "|" + down);
}

}  // namespace
}  // namespace actorllm
