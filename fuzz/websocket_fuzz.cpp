// The WebSocket message handler (net/websocket_session.cpp) on arbitrary messages: a real
// net::http_server on loopback with the tests' fake_engine (a fresh one per input) upgrades a
// connection at /v1/ws, then every line of the input goes to it as one text message (the
// client's JSON calls and cancels, see net/README.md), followed by a cancel of an id no call
// has, whose error answer says that every message before it was handled. Every message the
// server sends must be a JSON object, and it must never crash.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.hpp"
#include "fuzz/loopback.hpp"

namespace {

using namespace actorllm::fuzz;

constexpr std::string_view handshake =
    "GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
constexpr std::string_view sentinel_id = "fuzz-end-of-input";

/// A client's text frame: FIN, masked (RFC 6455 5.3) with a fixed key.
std::string text_frame(std::string_view payload) {
  static constexpr unsigned char key[4] = {0x37, 0xfa, 0x21, 0x3d};
  std::string frame;
  frame.push_back(static_cast<char>(0x81));
  const uint64_t n = payload.size();
  if (n < 126) {
    frame.push_back(static_cast<char>(0x80 | n));
  } else if (n < 65536) {
    frame.push_back(static_cast<char>(0x80 | 126));
    frame.push_back(static_cast<char>(n >> 8));
    frame.push_back(static_cast<char>(n & 0xff));
  } else {
    frame.push_back(static_cast<char>(0x80 | 127));
    for (int shift = 56; shift >= 0; shift -= 8) frame.push_back(static_cast<char>(n >> shift));
  }
  frame.append(reinterpret_cast<const char*>(key), 4);
  for (size_t i = 0; i < payload.size(); ++i) {
    frame.push_back(static_cast<char>(payload[i] ^ key[i % 4]));
  }
  return frame;
}

/// Reads the server's frames (unmasked) off the front of `bytes`: completed text messages go
/// to `messages`; false when a frame breaks the protocol.
bool take_messages(std::string& bytes, std::string& partial, std::vector<std::string>& messages,
                   bool& closed) {
  while (bytes.size() >= 2) {
    const auto b0 = static_cast<unsigned char>(bytes[0]);
    const auto b1 = static_cast<unsigned char>(bytes[1]);
    if (b1 & 0x80) return false;  // a server never masks
    size_t header = 2;
    uint64_t n = b1 & 0x7f;
    if (n == 126 || n == 127) {
      const size_t len_bytes = n == 126 ? 2 : 8;
      if (bytes.size() < 2 + len_bytes) return true;
      n = 0;
      for (size_t i = 0; i < len_bytes; ++i) n = n << 8 | static_cast<unsigned char>(bytes[2 + i]);
      header += len_bytes;
    }
    if (bytes.size() - header < n) return true;  // not all here yet
    const unsigned opcode = b0 & 0x0f;
    const std::string payload = bytes.substr(header, n);
    bytes.erase(0, header + n);
    if (opcode == 0x8) {
      closed = true;
      return true;
    }
    if (opcode >= 0x8) continue;                       // ping, pong
    if (opcode != 0x0 && opcode != 0x1) return false;  // the server sends text only
    partial += payload;
    if (b0 & 0x80) messages.push_back(std::move(partial)), partial.clear();
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  loopback_server server;
  connection client(server.server.port());
  std::string bytes;
  // The upgrade gets a long deadline: CI fuzzes two targets at a time on two cores, and an
  // input's fresh server once took over a second to answer it there. A server that never
  // answers still fails here (and libFuzzer's -timeout stops a hang in any case).
  const auto handshake_deadline = clock_type::now() + milliseconds(5000);
  FUZZ_CHECK(client.send_all(handshake));
  while (bytes.find("\r\n\r\n") == std::string::npos) {
    FUZZ_CHECK(client.read_some(bytes, handshake_deadline));
  }
  const auto deadline = clock_type::now() + milliseconds(1000);
  FUZZ_CHECK(bytes.rfind("HTTP/1.1 101", 0) == 0);
  bytes.erase(0, bytes.find("\r\n\r\n") + 4);

  const auto lines = split(input, "\n");
  for (size_t i = 0; i < lines.size() && i < 64; ++i) {
    if (!client.send_all(text_frame(lines[i]))) break;
  }
  client.send_all(text_frame(R"({"type": "cancel", "id": ")" + std::string(sentinel_id) + "\"}"));

  // Until the sentinel's answer (or the server closed), then what streams still send for a
  // moment. Every message is a JSON object.
  std::string partial;
  std::vector<std::string> messages;
  bool closed = false, seen_sentinel = false;
  auto quiet_until = deadline;
  while (!closed) {
    if (!client.read_some(bytes, seen_sentinel ? quiet_until : deadline)) break;
    FUZZ_CHECK(take_messages(bytes, partial, messages, closed));
    for (const auto& message : messages) {
      const auto parsed = nlohmann::json::parse(message, nullptr, /*allow_exceptions=*/false);
      FUZZ_CHECK(parsed.is_object());
      if (!seen_sentinel && parsed.value("id", nlohmann::json()) == std::string(sentinel_id)) {
        seen_sentinel = true;
        quiet_until = std::min(deadline, clock_type::now() + milliseconds(20));
      }
    }
    messages.clear();
  }
  return 0;
}
