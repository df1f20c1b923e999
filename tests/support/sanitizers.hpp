#pragma once
/// What kind of build the tests run in: CI runs every test binary under AddressSanitizer too.

namespace actorllm::testing {

/// Whether this is an AddressSanitizer build. Its allocator keeps freed blocks in quarantine
/// (resident memory counts temporaries), and its checks make heavy loops several times slower:
/// tests that repeat one path many times for coverage of values, not of code, repeat less.
constexpr bool address_sanitized() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

}  // namespace actorllm::testing
