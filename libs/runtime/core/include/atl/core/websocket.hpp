// The server side of RFC 6455 WebSockets, as pure functions over bytes: the
// handshake's accept key, a reader of a client's frames (which must be
// masked) that reassembles fragmented messages and hands control frames
// between them, and the server's own frames (never masked). The dashboard's
// web terminal speaks it; cpp-httplib 0.11 has no WebSocket of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "atl/core/expected.hpp"

namespace atl::ws {

enum class Opcode : std::uint8_t {
  continuation = 0x0,
  text = 0x1,
  binary = 0x2,
  close = 0x8,
  ping = 0x9,
  pong = 0xA,
};

// Close codes the terminal uses (RFC 6455 section 7.4.1).
inline constexpr std::uint16_t kCloseNormal = 1000;
inline constexpr std::uint16_t kCloseGoingAway = 1001;
inline constexpr std::uint16_t kCloseProtocolError = 1002;
inline constexpr std::uint16_t kCloseTooBig = 1009;

// SHA-1 of `data` (20 bytes): the handshake needs it and nothing else here.
std::string sha1(std::string_view data);
std::string base64(std::string_view bytes);

// Sec-WebSocket-Accept for a request's Sec-WebSocket-Key.
std::string accept_key(std::string_view key);

// What the server needs of an upgrade request's headers (names as sent; the
// caller looks them up case-insensitively). An empty optional: the header is
// absent.
struct UpgradeRequest {
  std::string method;
  std::optional<std::string> upgrade, connection, version, key;
};
// The request is a WebSocket handshake this server takes: GET, "Upgrade:
// websocket", "Connection" naming upgrade, version 13, a key of 16 bytes in
// base64. Otherwise the first thing that is wrong, in words.
Status check_upgrade(const UpgradeRequest& req);

// The 101 response (headers only, ends with the blank line).
std::string upgrade_response(std::string_view key);

// A whole message, or a control frame (close, ping, pong).
struct Message {
  Opcode op = Opcode::text;
  std::string data;
};

// The payload of a close frame: the code and the reason (cut to fit 125 bytes).
std::string close_payload(std::uint16_t code, std::string_view reason);
// A close frame's code (1005, "no status", when it has none) and reason.
struct CloseReason {
  std::uint16_t code = 1005;
  std::string reason;
};
CloseReason parse_close(std::string_view payload);

// One unfragmented, unmasked server frame.
std::string frame(Opcode op, std::string_view payload);

// Reads a client's bytes as they come. After an error it reads nothing more:
// the caller closes with kCloseProtocolError (or kCloseTooBig).
class FrameReader {
 public:
  explicit FrameReader(std::size_t max_message = 1 << 20) : max_message_(max_message) {}

  void feed(std::string_view bytes);
  // The next complete message or control frame, nothing while one is still
  // partial, or what is wrong with the stream.
  Expected<std::optional<Message>> next();
  bool too_big() const { return too_big_; }

 private:
  std::size_t max_message_;
  std::string buffer_;
  std::size_t used_ = 0;              // bytes of buffer_ already taken
  std::optional<Opcode> partial_op_;  // a fragmented message being put together
  std::string partial_;
  std::optional<std::string> failed_;
  bool too_big_ = false;

  Expected<std::optional<Message>> fail(std::string why, bool too_big = false);
};

}  // namespace atl::ws
