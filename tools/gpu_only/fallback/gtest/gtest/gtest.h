#pragma once
// A small stand-in for the part of GoogleTest the CUDA tests use (TEST, EXPECT_* / ASSERT_*,
// GTEST_SKIP, FAIL, AssertionResult), for gpu-only builds on machines without GoogleTest.
// Its output follows GoogleTest's ([ RUN ], [ OK ], [ SKIPPED ], [ FAILED ], [ PASSED ]).
#include <exception>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace testing {

class AssertionResult {
 public:
  explicit AssertionResult(bool ok) : ok_(ok) {}
  template <typename T>
  AssertionResult& operator<<(const T& value) {
    std::ostringstream os;
    os << value;
    message_ += os.str();
    return *this;
  }
  explicit operator bool() const { return ok_; }
  const std::string& message() const { return message_; }

 private:
  bool ok_;
  std::string message_;
};

inline AssertionResult AssertionSuccess() {
  return AssertionResult(true);
}
inline AssertionResult AssertionFailure() {
  return AssertionResult(false);
}

namespace internal {

struct test_info {
  const char* suite;
  const char* name;
  void (*body)();
};

inline std::vector<test_info>& registry() {
  static std::vector<test_info> tests;
  return tests;
}

struct registrar {
  registrar(const char* suite, const char* name, void (*body)()) {
    registry().push_back({suite, name, body});
  }
};

struct test_state {
  bool failed = false;
  bool skipped = false;
};

inline test_state& current() {
  static test_state state;
  return state;
}

/// Collects a streamed message; prints it and marks the test when destroyed.
class reporter {
 public:
  enum kind { failure, skip };
  reporter(kind k, const char* file, int line, std::string text)
      : kind_(k), file_(file), line_(line), text_(std::move(text)) {}
  reporter(const reporter&) = delete;
  ~reporter();
  template <typename T>
  reporter& operator<<(const T& value) {
    extra_ << value;
    return *this;
  }

 private:
  kind kind_;
  const char* file_;
  int line_;
  std::string text_;
  std::ostringstream extra_;
};

/// `return fatal() = reporter(...) << ...;` reports, then leaves the test body.
struct fatal {
  void operator=(const reporter&) const {}
};

template <typename T, typename = void>
struct printable : std::false_type {};
template <typename T>
struct printable<T,
                 std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};

template <typename T>
std::string show(const T& value) {
  if constexpr (printable<T>::value) {
    std::ostringstream os;
    os << value;
    return os.str();
  } else {
    return "(a value that cannot be printed)";
  }
}

inline AssertionResult to_result(const AssertionResult& r) {
  return r;
}
inline AssertionResult to_result(bool b) {
  return AssertionResult(b);
}

template <typename A, typename B, typename Op>
AssertionResult compare(const A& a, const B& b, Op op, const char* text_a, const char* text_b,
                        const char* text_op) {
  if (op(a, b)) return AssertionSuccess();
  return AssertionFailure() << "Expected: (" << text_a << ") " << text_op << " (" << text_b
                            << "), actual: " << show(a) << " vs " << show(b);
}

template <typename E, typename F>
bool throws(F&& f) {
  try {
    f();
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
  return false;
}

}  // namespace internal
}  // namespace testing

#define TEST(suite, name)                                                                         \
  static void suite##_##name##_body();                                                            \
  static const ::testing::internal::registrar suite##_##name##_registrar(#suite, #name,           \
                                                                         &suite##_##name##_body); \
  static void suite##_##name##_body()

#define MINI_GTEST_REPORT_(kind, text) \
  ::testing::internal::reporter(::testing::internal::reporter::kind, __FILE__, __LINE__, text)

#define MINI_GTEST_BOOL_(cond, on_fail)                                                      \
  if (const ::testing::AssertionResult mini_gtest_r_ = ::testing::internal::to_result(cond)) \
    ;                                                                                        \
  else                                                                                       \
    on_fail MINI_GTEST_REPORT_(failure,                                                      \
                               std::string("Value of: " #cond "\n") + mini_gtest_r_.message())

#define MINI_GTEST_NOT_(cond, on_fail) \
  if (!static_cast<bool>(cond))        \
    ;                                  \
  else                                 \
    on_fail MINI_GTEST_REPORT_(failure, "Value of: " #cond " is true, expected false")

#define MINI_GTEST_CMP_(a, b, op, on_fail)                                             \
  if (const ::testing::AssertionResult mini_gtest_r_ = ::testing::internal::compare(   \
          (a), (b), [](const auto& x, const auto& y) { return x op y; }, #a, #b, #op)) \
    ;                                                                                  \
  else                                                                                 \
    on_fail MINI_GTEST_REPORT_(failure, mini_gtest_r_.message())

#define MINI_GTEST_FATAL_ return ::testing::internal::fatal() =

#define EXPECT_TRUE(c) MINI_GTEST_BOOL_(c, )
#define ASSERT_TRUE(c) MINI_GTEST_BOOL_(c, MINI_GTEST_FATAL_)
#define EXPECT_FALSE(c) MINI_GTEST_NOT_(c, )
#define ASSERT_FALSE(c) MINI_GTEST_NOT_(c, MINI_GTEST_FATAL_)
#define EXPECT_EQ(a, b) MINI_GTEST_CMP_(a, b, ==, )
#define EXPECT_NE(a, b) MINI_GTEST_CMP_(a, b, !=, )
#define EXPECT_LT(a, b) MINI_GTEST_CMP_(a, b, <, )
#define EXPECT_LE(a, b) MINI_GTEST_CMP_(a, b, <=, )
#define EXPECT_GT(a, b) MINI_GTEST_CMP_(a, b, >, )
#define EXPECT_GE(a, b) MINI_GTEST_CMP_(a, b, >=, )
#define ASSERT_EQ(a, b) MINI_GTEST_CMP_(a, b, ==, MINI_GTEST_FATAL_)
#define ASSERT_NE(a, b) MINI_GTEST_CMP_(a, b, !=, MINI_GTEST_FATAL_)
#define ASSERT_LT(a, b) MINI_GTEST_CMP_(a, b, <, MINI_GTEST_FATAL_)
#define ASSERT_LE(a, b) MINI_GTEST_CMP_(a, b, <=, MINI_GTEST_FATAL_)
#define ASSERT_GT(a, b) MINI_GTEST_CMP_(a, b, >, MINI_GTEST_FATAL_)
#define ASSERT_GE(a, b) MINI_GTEST_CMP_(a, b, >=, MINI_GTEST_FATAL_)
#define EXPECT_THROW(stmt, exc)                        \
  if (::testing::internal::throws<exc>([&] { stmt; })) \
    ;                                                  \
  else                                                 \
    MINI_GTEST_REPORT_(failure, "Expected: " #stmt " throws " #exc)
#define FAIL() MINI_GTEST_FATAL_ MINI_GTEST_REPORT_(failure, "Failed")
#define ADD_FAILURE() MINI_GTEST_REPORT_(failure, "Failed")
#define GTEST_SKIP() MINI_GTEST_FATAL_ MINI_GTEST_REPORT_(skip, "Skipped")
