// BaspFraming: what a connection may carry before CAF's parser sees it.
#include "atl/core/basp_framing.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using atl::BaspFraming;

std::string header(unsigned char op, std::uint32_t payload) {
  std::string h(BaspFraming::kHeaderSize, '\0');
  h[0] = static_cast<char>(op);
  for (int i = 0; i < 4; ++i) h[4 + i] = static_cast<char>((payload >> (24 - 8 * i)) & 0xff);
  return h;
}

std::optional<std::string> feed(BaspFraming& f, const std::string& bytes) {
  return f.take(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

TEST(BaspFraming, AConversationPassesInPiecesOfAnySize) {
  // The acceptor's view: the client's handshake, then messages and heartbeats.
  const std::string stream = header(1, 40) + std::string(40, 'h') + header(2, 1000) +
                             std::string(1000, 'm') + header(6, 0) + header(3, 5) + "abcde";
  for (std::size_t piece : {1u, 7u, 31u, 32u, 33u, 4096u}) {
    BaspFraming f(true);
    for (std::size_t at = 0; at < stream.size(); at += piece)
      EXPECT_EQ(feed(f, stream.substr(at, piece)), std::nullopt) << "pieces of " << piece;
  }
  BaspFraming connector(false);
  EXPECT_EQ(feed(connector, header(0, 60) + std::string(60, 's') + header(2, 0)), std::nullopt);
}

TEST(BaspFraming, TheCrashPacketIsRefusedAtItsFirstHeader) {
  // 8 zero bytes, 8 bytes 0xff, 64 zero bytes: a server handshake without
  // payload sent to the acceptor (CAF 0.17 SIGSEGVed on it).
  const std::string crash = std::string(8, '\0') + std::string(8, '\xff') + std::string(64, '\0');
  BaspFraming f(true);
  EXPECT_EQ(feed(f, crash), "the first message is operation 0, not the client handshake");
  // Refused for good: later bytes change nothing.
  EXPECT_EQ(feed(f, header(2, 0)), "the first message is operation 0, not the client handshake");
  BaspFraming connector(false);
  EXPECT_EQ(feed(connector, header(0, 0)), "a server handshake without its payload");
}

TEST(BaspFraming, LengthsOverTheBoundAndUnknownOperationsAreRefused) {
  BaspFraming huge(true);
  EXPECT_EQ(feed(huge, header(1, 0xffffffffu)),
            "a payload of 4294967295 bytes, over the bound of 268435456");
  BaspFraming just(true);
  EXPECT_EQ(feed(just, header(1, BaspFraming::kMaxPayload)), std::nullopt);
  BaspFraming unknown(true);
  EXPECT_EQ(feed(unknown, header(1, 0) + header(7, 0)), "operation 7 is none of BASP's");
}

TEST(BaspFraming, EachSidesHandshakeComesFirstAndTheAcceptorNeverReadsAServers) {
  // CAF 0.17's connector sends a second client handshake (selecting the
  // connection): taken.
  BaspFraming second(true);
  EXPECT_EQ(feed(second, header(1, 32) + std::string(32, 'c') + header(1, 32) +
                             std::string(32, 'c') + header(2, 0)),
            std::nullopt);
  BaspFraming later(true);
  EXPECT_EQ(feed(later, header(1, 4) + "abcd" + header(0, 58)),
            "a server handshake sent to the acceptor");
  BaspFraming message_first(true);
  EXPECT_EQ(feed(message_first, header(2, 0)),
            "the first message is operation 2, not the client handshake");
  BaspFraming connector(false);
  EXPECT_EQ(feed(connector, header(1, 4)),
            "the first message is operation 1, not the server handshake");
}

}  // namespace
