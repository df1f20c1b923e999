// str.join takes any iterable, as Python's does, and a value that is not one is an error, not
// a null dereference. Found by fuzz/jinja_fuzz.cpp ('-'.join('', [...]) read a string as a
// list).
#include <gtest/gtest.h>

#include <string>

#include "chat_template/chat_template.hpp"
#include "tests/chat_template/render_source.hpp"

namespace actorllm {
namespace {

TEST(jinja_join, joins_any_iterable_as_python_does) {
  EXPECT_EQ(testing::render_source("{{ '-'.join(['a', 'b']) }}").text, "a-b");
  EXPECT_EQ(testing::render_source("{{ '-'.join('ab') }}").text, "a-b");
  EXPECT_EQ(testing::render_source("{{ '-'.join({'x': 1, 'y': 2}) }}").text, "x-y");
  EXPECT_EQ(testing::render_source("{{ '-'.join('', ['12']) }}").text, "");
}

TEST(jinja_join, a_value_that_is_not_iterable_is_an_error) {
  const auto r = testing::render_source("{{ '-'.join(3) }}");
  EXPECT_FALSE(r.ok()) << r.text;
  EXPECT_NE(r.error.find("not iterable"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace actorllm
