// Runs every TEST registered through the stand-in gtest.h; exit status 1 if any failed.
#include <cstdio>
#include <iostream>
#include <string>

#include "gtest/gtest.h"

namespace testing::internal {

reporter::~reporter() {
  std::cout << file_ << ":" << line_ << ": " << (kind_ == skip ? "Skipped" : "Failure") << "\n";
  if (kind_ == failure || !extra_.str().empty())
    std::cout << (kind_ == failure ? text_ + "\n" : std::string()) << extra_.str() << "\n";
  (kind_ == skip ? current().skipped : current().failed) = true;
}

}  // namespace testing::internal

int main(int argc, char** argv) {
  using namespace testing::internal;
  // Accepts --gtest_filter=Suite.* or a plain prefix; ignores other --gtest flags.
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--gtest_filter=", 0) == 0) filter = arg.substr(15);
  }
  if (!filter.empty() && filter.back() == '*') filter.pop_back();
  int passed = 0, skipped = 0, ran = 0;
  std::vector<std::string> failed, skipped_names;
  std::cout << "[==========] Running " << registry().size() << " tests (stand-in gtest)\n";
  for (const auto& t : registry()) {
    const std::string name = std::string(t.suite) + "." + t.name;
    if (!filter.empty() && name.rfind(filter, 0) != 0) continue;
    ++ran;
    current() = test_state{};
    std::cout << "[ RUN      ] " << name << std::endl;
    try {
      t.body();
    } catch (const std::exception& e) {
      std::cout << "C++ exception with description \"" << e.what()
                << "\" thrown in the test body.\n";
      current().failed = true;
    } catch (...) {
      std::cout << "Unknown C++ exception thrown in the test body.\n";
      current().failed = true;
    }
    if (current().failed) {
      failed.push_back(name);
      std::cout << "[  FAILED  ] " << name << std::endl;
    } else if (current().skipped) {
      ++skipped;
      skipped_names.push_back(name);
      std::cout << "[  SKIPPED ] " << name << std::endl;
    } else {
      ++passed;
      std::cout << "[       OK ] " << name << std::endl;
    }
  }
  std::cout << "[==========] " << ran << " tests ran.\n";
  std::cout << "[  PASSED  ] " << passed << " tests.\n";
  if (skipped) {
    std::cout << "[  SKIPPED ] " << skipped << " tests, listed below:\n";
    for (const auto& n : skipped_names) std::cout << "[  SKIPPED ] " << n << "\n";
  }
  if (!failed.empty()) {
    std::cout << "[  FAILED  ] " << failed.size() << " tests, listed below:\n";
    for (const auto& n : failed) std::cout << "[  FAILED  ] " << n << "\n";
  }
  return failed.empty() ? 0 : 1;
}
