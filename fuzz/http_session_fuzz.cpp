// The HTTP session (net/http_session.cpp) on arbitrary bytes from a client: a real
// net::http_server on loopback with the tests' fake_engine (a fresh one per input) reads them
// from a socket. The input is cut at "<<<pause>>>": the parts are sent one after the other,
// the client reading the server's answer in between (so that bytes arrive in the middle of a
// request, or while its answer is made: pipelining, 100-continue, streams, upgrades). The
// client then half-closes, unless the input starts with "<<<keep-open>>>", and reads until
// the server has closed or gone quiet. Whatever the server sends must begin as an HTTP/1.x
// response, and it must never crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.hpp"
#include "fuzz/loopback.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace actorllm::fuzz;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view keep_open = "<<<keep-open>>>";
  const bool half_close = input.substr(0, keep_open.size()) != keep_open;
  if (!half_close) input.remove_prefix(keep_open.size());

  loopback_server server;
  std::string answer;
  {
    connection client(server.server.port());
    const auto parts = split(input, "<<<pause>>>");
    bool open = true;
    for (size_t i = 0; i < parts.size() && open; ++i) {
      open = client.send_all(parts[i]);
      if (i + 1 < parts.size() && open) {
        open = !client.read_until_quiet(answer, milliseconds(5),
                                        clock_type::now() + milliseconds(200));
      }
    }
    if (open) {
      if (half_close) client.shutdown_write();
      client.read_until_quiet(answer, milliseconds(half_close ? 200 : 20),
                              clock_type::now() + milliseconds(1000));
    }
  }
  if (!answer.empty()) FUZZ_CHECK(answer.rfind("HTTP/1.", 0) == 0);
  return 0;
}
