#include "atl/core/door_frame.hpp"

#include <gtest/gtest.h>

namespace atl {
namespace {

using namespace std::chrono_literals;

TEST(DoorFrame, FramesComeOutWholeHoweverTheBytesArrive) {
  std::string stream = encode_door_frame("hello") + encode_door_frame("") +
                       encode_door_frame(std::string(70000, 'x'));
  for (std::size_t piece : {std::size_t{1}, std::size_t{3}, std::size_t{4096}, stream.size()}) {
    DoorFrameReader reader;
    std::vector<std::string> got;
    for (std::size_t at = 0; at < stream.size(); at += piece) {
      ASSERT_TRUE(reader.feed(std::string_view(stream).substr(at, piece)).ok());
      while (auto frame = reader.next()) got.push_back(*frame);
    }
    ASSERT_EQ(got.size(), 3u) << "pieces of " << piece;
    EXPECT_EQ(got[0], "hello");
    EXPECT_EQ(got[1], "");
    EXPECT_EQ(got[2], std::string(70000, 'x'));
    EXPECT_EQ(reader.pending(), 0u);
  }
}

TEST(DoorFrame, AHalfFrameWaitsForTheRest) {
  std::string frame = encode_door_frame("abcdef");
  DoorFrameReader reader;
  ASSERT_TRUE(reader.feed(frame.substr(0, 7)).ok());
  EXPECT_FALSE(reader.next().has_value());
  EXPECT_EQ(reader.pending(), 7u);
  ASSERT_TRUE(reader.feed(frame.substr(7)).ok());
  EXPECT_EQ(reader.next(), "abcdef");
}

TEST(DoorFrame, ALengthOverTheLimitBreaksTheStreamForGood) {
  DoorFrameReader reader;
  auto fed = reader.feed(std::string("\xff\xff\xff\xff", 4));
  ASSERT_FALSE(fed.ok());
  EXPECT_NE(fed.error().find("4294967295 bytes"), std::string::npos) << fed.error();
  EXPECT_FALSE(reader.next().has_value());
  EXPECT_FALSE(reader.feed(encode_door_frame("ok")).ok());  // nothing after it is read
  EXPECT_EQ(reader.pending(), 0u);                          // and nothing held
}

TEST(DoorFrame, ABadLengthBehindAGoodFrameIsCaught) {
  DoorFrameReader reader;
  ASSERT_TRUE(reader.feed(encode_door_frame("ok") + std::string("\x10\x00\x00\x00", 4)).ok());
  EXPECT_EQ(reader.next(), "ok");
  EXPECT_FALSE(reader.next().has_value());
  EXPECT_FALSE(reader.feed("x").ok());
}

TEST(DoorFrame, TheLargestFrameIsAccepted) {
  DoorFrameReader reader;
  std::string header;
  std::uint32_t n = static_cast<std::uint32_t>(kMaxDoorFrame);
  for (int i = 3; i >= 0; --i) header.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  EXPECT_TRUE(reader.feed(header).ok());
  EXPECT_FALSE(reader.next().has_value());
}

TEST(DoorRequest, RoundTripsItsTimeoutAndBody) {
  auto payload = encode_door_request({15s, std::string("\0body", 5)});
  auto back = decode_door_request(payload);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->timeout, 15s);
  EXPECT_EQ(back->body, std::string("\0body", 5));
}

TEST(DoorRequest, RefusesAShortPayloadAndTimeoutsNoOneAsksFor) {
  EXPECT_FALSE(decode_door_request("").ok());
  EXPECT_FALSE(decode_door_request("1234567").ok());
  auto zero = decode_door_request(encode_door_request({0ms, "x"}));
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().find("timeout of 0 ms"), std::string::npos) << zero.error();
  EXPECT_FALSE(decode_door_request(encode_door_request({std::chrono::hours(25), "x"})).ok());
  EXPECT_TRUE(decode_door_request(encode_door_request({std::chrono::hours(24), "x"})).ok());
  EXPECT_FALSE(decode_door_request(std::string(8, '\xff')).ok());
}

TEST(DoorAnswer, RoundTripsBothKindsAndRefusesOthers) {
  auto ok = decode_door_answer(encode_door_answer({true, "reply"}));
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->ok);
  EXPECT_EQ(ok->body, "reply");
  auto failed = decode_door_answer(encode_door_answer({false, "request_timeout"}));
  ASSERT_TRUE(failed.ok());
  EXPECT_FALSE(failed->ok);
  EXPECT_EQ(failed->body, "request_timeout");
  EXPECT_FALSE(decode_door_answer("").ok());
  auto odd = decode_door_answer("\x02x");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().find("kind 2"), std::string::npos) << odd.error();
}

}  // namespace
}  // namespace atl
