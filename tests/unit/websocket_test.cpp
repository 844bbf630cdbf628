#include "atl/core/websocket.hpp"

#include <gtest/gtest.h>

#include <string>

namespace atl::ws {
namespace {

std::string hex(std::string_view bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {d[c >> 4], d[c & 15]};
  return out;
}

// A client's frame: masked with `mask`, as a browser sends it.
std::string client_frame(std::uint8_t first_byte, std::string_view payload,
                         std::string mask = "\x12\x34\x56\x78") {
  std::string out;
  out.push_back(static_cast<char>(first_byte));
  const auto n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(0x80 | n));
  } else if (n <= 0xFFFF) {
    out.push_back(static_cast<char>(0x80 | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xFF));
  } else {
    out.push_back(static_cast<char>(0x80 | 127));
    for (int i = 7; i >= 0; --i)
      out.push_back(static_cast<char>((std::uint64_t(n) >> (i * 8)) & 0xFF));
  }
  out += mask;
  for (std::size_t i = 0; i < n; ++i) out.push_back(static_cast<char>(payload[i] ^ mask[i % 4]));
  return out;
}

Message next_message(FrameReader& r) {
  auto m = r.next();
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error());
  EXPECT_TRUE(m.ok() && m->has_value());
  return m.ok() && m->has_value() ? **m : Message{};
}

TEST(WebSocket, Sha1AndBase64MatchTheirStandardVectors) {
  EXPECT_EQ(hex(sha1("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(hex(sha1("")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  // Two blocks: the padding crosses a block boundary.
  EXPECT_EQ(hex(sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(base64(""), "");
  EXPECT_EQ(base64("f"), "Zg==");
  EXPECT_EQ(base64("fo"), "Zm8=");
  EXPECT_EQ(base64("foo"), "Zm9v");
  EXPECT_EQ(base64("foobar"), "Zm9vYmFy");
}

TEST(WebSocket, AcceptKeyIsTheRfcsExample) {
  EXPECT_EQ(accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  auto r = upgrade_response("dGhlIHNhbXBsZSBub25jZQ==");
  EXPECT_EQ(r.rfind("HTTP/1.1 101 Switching Protocols\r\n", 0), 0u);
  EXPECT_NE(r.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"), std::string::npos);
  EXPECT_EQ(r.substr(r.size() - 4), "\r\n\r\n");
}

UpgradeRequest good_upgrade() {
  return {"GET", "websocket", "Upgrade", "13", "dGhlIHNhbXBsZSBub25jZQ=="};
}

TEST(WebSocket, AHandshakeIsCheckedHeaderByHeader) {
  EXPECT_TRUE(check_upgrade(good_upgrade()).ok());
  auto u = good_upgrade();
  u.upgrade = "WebSocket";
  u.connection = "keep-alive, Upgrade";  // Firefox sends both
  EXPECT_TRUE(check_upgrade(u).ok());

  auto refused = [](UpgradeRequest r, const std::string& words) {
    auto s = check_upgrade(r);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().find(words), std::string::npos) << s.error();
  };
  u = good_upgrade(), u.method = "POST", refused(u, "not POST");
  u = good_upgrade(), u.upgrade.reset(), refused(u, "Upgrade: websocket");
  u = good_upgrade(), u.upgrade = "h2c", refused(u, "Upgrade: websocket");
  u = good_upgrade(), u.connection.reset(), refused(u, "Connection");
  u = good_upgrade(), u.connection = "keep-alive", refused(u, "Connection");
  u = good_upgrade(), u.connection = "upgrades", refused(u, "Connection");
  u = good_upgrade(), u.version = "8", refused(u, "'8' is not 13");
  u = good_upgrade(), u.version.reset(), refused(u, "is not 13");
  u = good_upgrade(), u.key.reset(), refused(u, "no Sec-WebSocket-Key");
  u = good_upgrade(), u.key = "c2hvcnQ=", refused(u, "not 16 bytes");          // 5 bytes
  u = good_upgrade(), u.key = "dGhlIHNhbXBsZSBub25jZQ", refused(u, "not 16");  // no padding
  u = good_upgrade(), u.key = "dGhlIHNhbXBsZSBub2=jZQ==", refused(u, "not 16");
  u = good_upgrade(), u.key = "dGhlIHNhbXBsZSBub25j!Q==", refused(u, "not 16");
}

TEST(WebSocket, ServerFramesUseTheShortestLengthAndNoMask) {
  EXPECT_EQ(hex(frame(Opcode::text, "Hi")), "81024869");
  auto f = frame(Opcode::binary, std::string(125, 'a'));
  EXPECT_EQ(hex(f.substr(0, 2)), "827d");
  f = frame(Opcode::binary, std::string(126, 'a'));
  EXPECT_EQ(hex(f.substr(0, 4)), "827e007e");
  EXPECT_EQ(f.size(), 4u + 126);
  f = frame(Opcode::binary, std::string(65536, 'a'));
  EXPECT_EQ(hex(f.substr(0, 10)), "827f0000000000010000");
  EXPECT_EQ(f.size(), 10u + 65536);
  EXPECT_EQ(hex(frame(Opcode::close, close_payload(1000, "bye"))), "880503e8627965");
}

TEST(WebSocket, ClosePayloadsRoundTripAndCutOnlyBetweenCharacters) {
  auto c = parse_close(close_payload(kCloseGoingAway, "the pod was lost"));
  EXPECT_EQ(c.code, kCloseGoingAway);
  EXPECT_EQ(c.reason, "the pod was lost");
  EXPECT_EQ(parse_close("").code, 1005);
  // 122 ASCII bytes then a two-byte character: it would end at byte 124 of
  // the reason's 123, so it goes whole.
  std::string reason = std::string(122, 'x') + "\xc3\xa9" + "tail";
  auto p = close_payload(1000, reason);
  EXPECT_EQ(p.size(), 2u + 122);
  // 121 then the character: it fits, and stays.
  reason = std::string(121, 'x') + "\xc3\xa9" + "tail";
  p = close_payload(1000, reason);
  EXPECT_EQ(p.size(), 2u + 123);
  EXPECT_EQ(p.substr(p.size() - 2), "\xc3\xa9");
  EXPECT_LE(close_payload(1000, std::string(500, 'y')).size(), 125u);
}

TEST(WebSocket, ReadsMaskedFramesOfEveryLengthEncodingEvenAByteAtATime) {
  FrameReader r;
  const std::string big(70000, 'z');
  std::string bytes = client_frame(0x81, "ls -l\r") + client_frame(0x82, std::string(300, 'q')) +
                      client_frame(0x82, big);
  for (char c : bytes) r.feed(std::string_view(&c, 1));
  auto m = next_message(r);
  EXPECT_EQ(m.op, Opcode::text);
  EXPECT_EQ(m.data, "ls -l\r");
  m = next_message(r);
  EXPECT_EQ(m.op, Opcode::binary);
  EXPECT_EQ(m.data, std::string(300, 'q'));
  m = next_message(r);
  EXPECT_EQ(m.data, big);
  auto none = r.next();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(WebSocket, PutsFragmentsTogetherAndPassesControlFramesBetweenThem) {
  FrameReader r;
  r.feed(client_frame(0x01, "hel"));      // text, not final
  r.feed(client_frame(0x89, "are you"));  // a ping in the middle
  r.feed(client_frame(0x00, "lo "));      // continuation
  r.feed(client_frame(0x80, "world"));    // final continuation
  r.feed(client_frame(0x88, close_payload(1000, "done")));
  auto ping = next_message(r);
  EXPECT_EQ(ping.op, Opcode::ping);
  EXPECT_EQ(ping.data, "are you");
  auto text = next_message(r);
  EXPECT_EQ(text.op, Opcode::text);
  EXPECT_EQ(text.data, "hello world");
  auto close = next_message(r);
  EXPECT_EQ(close.op, Opcode::close);
  EXPECT_EQ(parse_close(close.data).reason, "done");
}

TEST(WebSocket, EveryProtocolViolationIsAnErrorAndTheReaderStaysFailed) {
  auto violation = [](std::string bytes, const std::string& words, std::size_t max = 1 << 20) {
    FrameReader r(max);
    r.feed(bytes);
    auto m = r.next();
    ASSERT_FALSE(m.ok()) << words;
    EXPECT_NE(m.error().find(words), std::string::npos) << m.error();
    r.feed(client_frame(0x81, "more"));
    EXPECT_FALSE(r.next().ok());  // failed for good
  };
  std::string unmasked = frame(Opcode::text, "hi");
  violation(unmasked, "not masked");
  violation(client_frame(0xC1, "x"), "reserved bits");
  violation(client_frame(0x83, "x"), "unknown frame opcode 3");
  violation(client_frame(0x8B, "x"), "unknown frame opcode 11");
  violation(client_frame(0x09, "x"), "control frame");  // a fragmented ping
  violation(client_frame(0x89, std::string(126, 'p')), "control frame");
  violation(client_frame(0x80, "x"), "continuation frame with no message");
  violation(client_frame(0x01, "a") + client_frame(0x81, "b"), "new message began");
  std::string huge = client_frame(0x82, "");
  huge[1] = static_cast<char>(0x80 | 127);
  huge.insert(2, std::string("\x80\0\0\0\0\0\0\0", 8));
  violation(huge, "top bit");
  violation(client_frame(0x82, std::string(2000, 'a')), "over 1024 bytes", 1024);
  // Too big across fragments as well.
  violation(client_frame(0x02, std::string(600, 'a')) + client_frame(0x80, std::string(600, 'a')),
            "over 1024 bytes", 1024);
  FrameReader r(1024);
  r.feed(client_frame(0x82, std::string(2000, 'a')));
  EXPECT_FALSE(r.next().ok());
  EXPECT_TRUE(r.too_big());
}

}  // namespace
}  // namespace atl::ws
