// Bounds on "type": "number": every plain decimal within them is matched and nothing else,
// checked case by case at the boundaries and against a slow oracle (strtold) on random texts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <regex>

#include "grammar/grammar_error.hpp"
#include "grammar/number_range.hpp"
#include "tests/grammar/grammar_test_util.hpp"

namespace actorllm::grammar {
namespace {

using testing::matches;
using testing::schema;

void check(const std::string& s, const std::vector<std::string>& accepted,
           const std::vector<std::string>& rejected) {
  auto g = schema(s);
  for (const auto& t : accepted) EXPECT_TRUE(matches(g, t)) << s << "\nshould match: " << t;
  for (const auto& t : rejected) EXPECT_FALSE(matches(g, t)) << s << "\nshould not match: " << t;
}

TEST(number_bounds, inclusive_and_exclusive_at_the_boundaries) {
  check(R"({"type": "number", "minimum": -2.5, "maximum": 7})",
        {"-2.5", "-2.50", "-2.4999", "-2", "-0.5", "0", "0.0", "3.14159", "7", "7.000"},
        {"-2.5000001", "-2.51", "-3", "7.0000001", "8", "10", "-10", "-0", "-0.0"});
  check(R"({"type": "number", "exclusiveMinimum": -2.5, "exclusiveMaximum": 1e3})",
        {"-2.4999999999", "-2.49", "0", "999", "999.999999999", "12.5"},
        {"-2.5", "-2.50", "1000", "1000.0", "1000.0001", "-2.6", "10000"});
  check(R"({"type": "number", "exclusiveMinimum": 0})", {"0.0000001", "1", "123456789.5"},
        {"0", "0.0", "-0.1", "-1"});
  check(R"({"type": "number", "maximum": 0})", {"0", "-0.001", "-123.5"}, {"0.001", "1", "-0"});
  check(R"({"type": "number", "exclusiveMaximum": 0})", {"-0.001", "-5"}, {"0", "0.000", "1"});
  check(R"({"type": "number", "minimum": 0})", {"0", "1.5", "100000"}, {"-1", "-0.5"});
  check(R"({"type": "number", "minimum": 0.375, "maximum": 0.375})", {"0.375", "0.3750"},
        {"0.3751", "0.374", "0", "1"});
  check(R"({"type": "number", "minimum": -120.25, "maximum": -3.125})",
        {"-120.25", "-100", "-3.125", "-99.9", "-3.2"}, {"-3.1", "-120.26", "-200", "0", "3.5"});
  // A bound that is no binary fraction means the decimal written.
  check(R"({"type": "number", "maximum": 0.1})", {"0.1", "0.09999999999999999999", "-5"},
        {"0.10000000000000000001", "0.11"});
  check(R"({"type": "number", "exclusiveMaximum": 0.1})", {"0.0999"}, {"0.1", "0.100"});
}

TEST(number_bounds, draft4_booleans_and_the_tighter_of_two_bounds) {
  check(R"({"type": "number", "minimum": 1.5, "exclusiveMinimum": true, "maximum": 2})",
        {"1.51", "2"}, {"1.5", "1.4"});
  check(R"({"type": "number", "minimum": 3, "exclusiveMinimum": 1})", {"3", "3.5"}, {"2"});
  check(R"({"type": "number", "minimum": 1, "exclusiveMinimum": 3})", {"3.01"}, {"3", "2"});
  check(R"({"type": "number", "maximum": 1, "exclusiveMaximum": 1})", {"0.99"}, {"1"});
}

TEST(number_bounds, bounds_far_from_one) {
  check(R"({"type": "number", "minimum": 1e300})",
        {"1" + std::string(300, '0'), "2" + std::string(300, '0') + ".5"},
        {"9" + std::string(299, '9'), "1e300", "1"});
  check(R"({"type": "number", "exclusiveMinimum": 1e-20, "maximum": 1e-19})",
        {"0.00000000000000000001000001", "0.0000000000000000001"},
        {"0.00000000000000000001", "0.00000000000000000000999", "0.00000000000000000010001"});
}

TEST(number_bounds, numbers_inside_bounds_have_no_exponent) {
  check(R"({"type": "number", "minimum": -1, "maximum": 1})", {"0.5"}, {"5e-1", "1E0", "0e0"});
}

TEST(number_bounds, an_empty_range_is_refused) {
  for (const char* s : {R"({"type": "number", "minimum": 2, "maximum": 1.5})",
                        R"({"type": "number", "minimum": 2, "exclusiveMaximum": 2})",
                        R"({"type": "number", "exclusiveMinimum": 0, "maximum": 0})"}) {
    try {
      schema(s);
      ADD_FAILURE() << "no error for " << s;
    } catch (const grammar_error& e) {
      EXPECT_NE(std::string(e.what()).find("no number lies within the bounds"), std::string::npos)
          << e.what();
    }
  }
}

TEST(number_bounds, decimals_read_exactly) {
  auto d = parse_decimal("-12.50e-3");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->negative);
  EXPECT_EQ(d->int_digits, "0");
  EXPECT_EQ(d->frac_digits, "0125");
  d = parse_decimal("1.5e2");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->int_digits, "150");
  EXPECT_EQ(d->frac_digits, "");
  EXPECT_FALSE(parse_decimal("1e999999"));
  EXPECT_FALSE(parse_decimal("1."));
  EXPECT_EQ(compare(*parse_decimal("-0"), *parse_decimal("0.000")), 0);
  EXPECT_LT(compare(*parse_decimal("-3"), *parse_decimal("-2.9")), 0);
  EXPECT_GT(compare(*parse_decimal("10"), *parse_decimal("9.99")), 0);
}

// Random texts near and far from the bounds; the oracle reads them as long doubles, exact here
// since the bounds are binary fractions and the texts have few significant digits.
struct range_case {
  std::optional<std::string> lo, hi;
  bool lo_inclusive = true, hi_inclusive = true;
};

std::string schema_of(const range_case& c) {
  std::string s = R"({"type": "number")";
  if (c.lo)
    s += std::string(", \"") + (c.lo_inclusive ? "minimum" : "exclusiveMinimum") + "\": " + *c.lo;
  if (c.hi)
    s += std::string(", \"") + (c.hi_inclusive ? "maximum" : "exclusiveMaximum") + "\": " + *c.hi;
  return s + "}";
}

bool oracle(const range_case& c, const std::string& text) {
  static const std::regex plain("-?(0|[1-9][0-9]*)(\\.[0-9]+)?");
  if (!std::regex_match(text, plain) ||
      (text.rfind("-", 0) == 0 && strtold(text.c_str(), nullptr) == 0))
    return false;  // not a plain decimal, or a negative zero
  const long double x = strtold(text.c_str(), nullptr);
  if (c.lo) {
    const long double lo = strtold(c.lo->c_str(), nullptr);
    if (c.lo_inclusive ? x < lo : x <= lo) return false;
  }
  if (c.hi) {
    const long double hi = strtold(c.hi->c_str(), nullptr);
    if (c.hi_inclusive ? x > hi : x >= hi) return false;
  }
  return true;
}

std::string random_text(std::mt19937& rng, const range_case& c) {
  auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
  auto digits = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += char('0' + pick(10));
    return s;
  };
  std::string t;
  switch (pick(4)) {
    case 0: {  // a bound, nudged by trailing zeros or a last digit
      const std::optional<std::string>& b = pick(2) ? c.lo : c.hi;
      t = b ? *b : "0";
      if (t.find('e') != std::string::npos)
        t = std::to_string(int64_t(strtold(t.c_str(), nullptr)));
      if (t.find('.') == std::string::npos && pick(2)) t += ".";
      if (t.back() == '.') t += std::string(size_t(1 + pick(3)), '0');
      if (pick(2)) t += digits(1 + pick(3));
      if (pick(4) == 0) t = t.substr(0, t.size() - 1);
      return t;
    }
    case 1:  // a malformed or exponent text
      return std::vector<std::string>{"01",   "-",   "1.", ".5",     "1e2",   "-0",
                                      "00.5", "--1", "+1", "1.5E-1", "-0.000"}[size_t(pick(11))];
    default: {
      if (pick(2)) t += "-";
      const int len = pick(5);
      t += len == 0 ? "0" : std::string(1, char('1' + pick(9))) + digits(len - 1);
      if (pick(2)) t += "." + digits(1 + pick(6));
      return t;
    }
  }
}

TEST(number_bounds, random_numbers_agree_with_the_oracle) {
  const std::vector<range_case> cases = {{"-2.5", "1e3", true, false},
                                         {"-2.5", "1e3", false, true},
                                         {"0.375", std::nullopt},
                                         {std::nullopt, "-12.0625"},
                                         {"-1000", "-999.5"},
                                         {"0", "0.5", false, false},
                                         {"-7.75", "7.75"},
                                         {"99", "101"},
                                         {"9.5", "10.5", false, true},
                                         {std::nullopt, "0", true, false}};
  std::mt19937 rng(7);
  for (const auto& c : cases) {
    const std::string s = schema_of(c);
    auto g = schema(s);
    int accepted = 0;
    for (int i = 0; i < 3000; ++i) {
      const std::string t = random_text(rng, c);
      const bool expected = oracle(c, t);
      accepted += expected;
      ASSERT_EQ(matches(g, t), expected) << s << "\ntext: " << t;
    }
    EXPECT_GT(accepted, 100) << s;
  }
}

}  // namespace
}  // namespace actorllm::grammar
