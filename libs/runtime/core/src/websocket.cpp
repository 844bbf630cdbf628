#include "atl/core/websocket.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace atl::ws {

namespace {

std::uint32_t rotl(std::uint32_t v, int n) { return (v << n) | (v >> (32 - n)); }

bool is_control(Opcode op) { return static_cast<std::uint8_t>(op) >= 0x8; }

bool known(std::uint8_t op) { return op <= 0x2 || (op >= 0x8 && op <= 0xA); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "keep-alive, Upgrade" names upgrade: a comma-separated list of tokens.
bool names_token(std::string_view list, std::string_view token) {
  std::string l = lower(list);
  std::size_t start = 0;
  while (start <= l.size()) {
    auto end = l.find(',', start);
    if (end == std::string::npos) end = l.size();
    auto item = std::string_view(l).substr(start, end - start);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (item == token) return true;
    start = end + 1;
  }
  return false;
}

std::optional<std::size_t> decoded_base64_size(std::string_view s) {
  if (s.size() % 4 != 0) return std::nullopt;
  std::size_t pad = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '=') {
      if (i + 2 < s.size()) return std::nullopt;  // '=' only in the last two places
      ++pad;
    } else if (pad || !(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/')) {
      return std::nullopt;
    }
  }
  return s.size() / 4 * 3 - pad;
}

}  // namespace

std::string sha1(std::string_view data) {
  std::uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  std::string msg(data);
  const std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
  msg.push_back(static_cast<char>(0x80));
  while (msg.size() % 64 != 56) msg.push_back('\0');
  for (int i = 7; i >= 0; --i) msg.push_back(static_cast<char>((bits >> (i * 8)) & 0xFF));
  for (std::size_t block = 0; block < msg.size(); block += 64) {
    std::array<std::uint32_t, 80> w{};
    for (int i = 0; i < 16; ++i) {
      const auto* p = reinterpret_cast<const unsigned char*>(msg.data() + block + i * 4);
      w[i] = (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) |
             (std::uint32_t(p[2]) << 8) | std::uint32_t(p[3]);
    }
    for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; ++i) {
      std::uint32_t f, k;
      if (i < 20) {
        f = (b & c) | (~b & d), k = 0x5A827999;
      } else if (i < 40) {
        f = b ^ c ^ d, k = 0x6ED9EBA1;
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
      } else {
        f = b ^ c ^ d, k = 0xCA62C1D6;
      }
      std::uint32_t t = rotl(a, 5) + f + e + k + w[i];
      e = d, d = c, c = rotl(b, 30), b = a, a = t;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
  }
  std::string out;
  for (auto v : h)
    for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((v >> (i * 8)) & 0xFF));
  return out;
}

std::string base64(std::string_view bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    std::uint32_t v = (std::uint8_t(bytes[i]) << 16) | (std::uint8_t(bytes[i + 1]) << 8) |
                      std::uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(k[(v >> s) & 63]);
  }
  if (i + 1 == bytes.size()) {
    std::uint32_t v = std::uint8_t(bytes[i]) << 16;
    out += {k[(v >> 18) & 63], k[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    std::uint32_t v = (std::uint8_t(bytes[i]) << 16) | (std::uint8_t(bytes[i + 1]) << 8);
    out += {k[(v >> 18) & 63], k[(v >> 12) & 63], k[(v >> 6) & 63], '='};
  }
  return out;
}

std::string accept_key(std::string_view key) {
  return base64(sha1(std::string(key) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"));
}

Status check_upgrade(const UpgradeRequest& req) {
  if (req.method != "GET") return make_error("a WebSocket handshake is a GET, not " + req.method);
  if (!req.upgrade || !names_token(*req.upgrade, "websocket"))
    return make_error("not a WebSocket handshake: no 'Upgrade: websocket'");
  if (!req.connection || !names_token(*req.connection, "upgrade"))
    return make_error("not a WebSocket handshake: 'Connection' does not name upgrade");
  if (!req.version || *req.version != "13")
    return make_error("WebSocket version '" + req.version.value_or("") + "' is not 13");
  if (!req.key) return make_error("no Sec-WebSocket-Key");
  auto size = decoded_base64_size(*req.key);
  if (!size || *size != 16)
    return make_error("Sec-WebSocket-Key '" + *req.key + "' is not 16 bytes in base64");
  return Ok{};
}

std::string upgrade_response(std::string_view key) {
  return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Accept: " +
         accept_key(key) + "\r\n\r\n";
}

std::string close_payload(std::uint16_t code, std::string_view reason) {
  std::string out;
  out.push_back(static_cast<char>(code >> 8));
  out.push_back(static_cast<char>(code & 0xFF));
  if (reason.size() > 123) {
    // Cut at 123 bytes, never inside a UTF-8 character: find where the last
    // character begins and keep it only when it is whole.
    std::size_t start = 123;
    while (start > 0 && (static_cast<unsigned char>(reason[start - 1]) & 0xC0) == 0x80) --start;
    std::size_t keep = 123;
    if (start > 0) {
      const auto lead = static_cast<unsigned char>(reason[start - 1]);
      const std::size_t width = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
      if (start - 1 + width > 123) keep = start - 1;
    }
    reason = reason.substr(0, keep);
  }
  out.append(reason);
  return out;
}

CloseReason parse_close(std::string_view payload) {
  CloseReason r;
  if (payload.size() >= 2) {
    r.code = static_cast<std::uint16_t>((std::uint8_t(payload[0]) << 8) | std::uint8_t(payload[1]));
    r.reason = std::string(payload.substr(2));
  }
  return r;
}

std::string frame(Opcode op, std::string_view payload) {
  std::string out;
  out.push_back(static_cast<char>(0x80 | static_cast<std::uint8_t>(op)));
  const std::uint64_t n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(n));
  } else if (n <= 0xFFFF) {
    out.push_back(static_cast<char>(126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xFF));
  } else {
    out.push_back(static_cast<char>(127));
    for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((n >> (i * 8)) & 0xFF));
  }
  out.append(payload);
  return out;
}

void FrameReader::feed(std::string_view bytes) {
  if (failed_) return;
  if (used_ > 0 && used_ * 2 >= buffer_.size()) {
    buffer_.erase(0, used_);
    used_ = 0;
  }
  buffer_.append(bytes);
}

Expected<std::optional<Message>> FrameReader::fail(std::string why, bool too_big) {
  failed_ = why;
  too_big_ = too_big;
  buffer_.clear();
  used_ = 0;
  return make_error(std::move(why));
}

Expected<std::optional<Message>> FrameReader::next() {
  if (failed_) return make_error(*failed_);
  for (;;) {
    const std::string_view in = std::string_view(buffer_).substr(used_);
    if (in.size() < 2) return std::optional<Message>{};
    const auto b0 = static_cast<std::uint8_t>(in[0]);
    const auto b1 = static_cast<std::uint8_t>(in[1]);
    const bool fin = b0 & 0x80;
    const std::uint8_t raw_op = b0 & 0x0F;
    if (b0 & 0x70) return fail("a frame sets reserved bits (no extension was agreed)");
    if (!known(raw_op)) return fail("unknown frame opcode " + std::to_string(raw_op));
    const auto op = static_cast<Opcode>(raw_op);
    if (!(b1 & 0x80)) return fail("a client frame is not masked");
    std::uint64_t len = b1 & 0x7F;
    std::size_t header = 2;
    if (len == 126) {
      if (in.size() < 4) return std::optional<Message>{};
      len = (std::uint64_t(std::uint8_t(in[2])) << 8) | std::uint8_t(in[3]);
      header = 4;
    } else if (len == 127) {
      if (in.size() < 10) return std::optional<Message>{};
      len = 0;
      for (int i = 0; i < 8; ++i) len = (len << 8) | std::uint8_t(in[2 + i]);
      if (len >> 63) return fail("a frame's length has its top bit set");
      header = 10;
    }
    if (is_control(op) && (!fin || len > 125))
      return fail("a control frame is fragmented or longer than 125 bytes");
    const std::size_t so_far = is_control(op) ? 0 : partial_.size();
    if (len > max_message_ || so_far + len > max_message_)
      return fail("a message is over " + std::to_string(max_message_) + " bytes", true);
    if (in.size() < header + 4 + len) return std::optional<Message>{};
    const std::string_view mask = in.substr(header, 4);
    std::string payload(in.substr(header + 4, len));
    for (std::size_t i = 0; i < payload.size(); ++i) payload[i] ^= mask[i % 4];
    used_ += header + 4 + len;

    if (is_control(op)) return std::optional<Message>{Message{op, std::move(payload)}};
    if (op == Opcode::continuation) {
      if (!partial_op_) return fail("a continuation frame with no message to continue");
      partial_ += payload;
    } else {
      if (partial_op_) return fail("a new message began before the last one ended");
      partial_op_ = op;
      partial_ = std::move(payload);
    }
    if (fin) {
      Message m{*partial_op_, std::move(partial_)};
      partial_op_.reset();
      partial_.clear();
      return std::optional<Message>{std::move(m)};
    }
  }
}

}  // namespace atl::ws
