#include "atl/os/line_chunker.hpp"

#include <gtest/gtest.h>

TEST(LineChunker, KeepsPartialLinesUntilComplete) {
  atl::os::LineChunker c;
  c.feed("one\ntw");
  auto first = c.take(1024);
  EXPECT_EQ(first.data, "one\n");
  EXPECT_EQ(first.lines, 1);
  EXPECT_EQ(c.take(1024).lines, 0);
  c.feed("o\nthree");
  EXPECT_EQ(c.take(1024).data, "two\n");
  auto rest = c.take_rest();
  EXPECT_EQ(rest.data, "three\n");
  EXPECT_EQ(rest.lines, 1);
  EXPECT_EQ(c.buffered_bytes(), 0u);
}

TEST(LineChunker, TakeRespectsMaxBytesAtLineBoundaries) {
  atl::os::LineChunker c;
  c.feed("aaaa\nbbbb\ncccc\n");
  auto chunk = c.take(11);
  EXPECT_EQ(chunk.data, "aaaa\nbbbb\n");
  EXPECT_EQ(chunk.lines, 2);
  EXPECT_EQ(c.take(3).data, "cccc\n");  // at least one line even if larger
}

TEST(LineChunker, CutsOverlongLines) {
  atl::os::LineChunker c(4);
  c.feed("abcdefghij\n");
  auto chunk = c.take_rest();
  EXPECT_EQ(chunk.data, "abcd\nefgh\nij\n");
  EXPECT_EQ(chunk.lines, 3);
}

TEST(LineChunker, ByteByByteFeedingLosesNothing) {
  atl::os::LineChunker c;
  std::string input;
  for (int i = 0; i < 500; ++i) input += "line " + std::to_string(i) + "\n";
  std::string out;
  int lines = 0;
  for (char ch : input) {
    c.feed(std::string_view(&ch, 1));
    auto chunk = c.take(37);
    out += chunk.data;
    lines += chunk.lines;
  }
  auto rest = c.take_rest();
  out += rest.data;
  lines += rest.lines;
  EXPECT_EQ(out, input);
  EXPECT_EQ(lines, 500);
}

TEST(LineChunker, TakePartialHandsOverAnUnfinishedLineAsItIs) {
  atl::os::LineChunker c;
  c.feed("done\n 10%\r 20%");
  auto chunk = c.take_partial();
  EXPECT_EQ(chunk.data, "done\n 10%\r 20%");  // no '\n' made up
  EXPECT_EQ(chunk.lines, 1);
  EXPECT_EQ(c.buffered_bytes(), 0u);
  c.feed("\r100%\n");
  auto rest = c.take(1 << 20);
  EXPECT_EQ(rest.data, "\r100%\n");
  EXPECT_EQ(rest.lines, 1);
}

TEST(LineChunker, ABufferHandedOverWholeKeepsItsUnfinishedLineAndReadsOn) {
  // A pump's read: thousands of lines and the start of the next, straight
  // into the chunker; the chunk takes the buffer itself, the rest stays.
  atl::os::LineChunker c;
  std::string lines;
  for (int i = 0; i < 3000; ++i) lines += "line " + std::to_string(i) + "\n";
  const std::string read = lines + "unfin";
  char* into = c.prepare(read.size() + 4096);
  std::copy(read.begin(), read.end(), into);
  c.commit(read.size());
  auto chunk = c.take(1 << 20);
  EXPECT_EQ(chunk.data, lines);
  EXPECT_EQ(chunk.lines, 3000);
  EXPECT_EQ(c.buffered_bytes(), 5u);
  EXPECT_EQ(c.complete_bytes(), 0u);
  into = c.prepare(64);
  const std::string more = "ished\nnext\n";
  std::copy(more.begin(), more.end(), into);
  c.commit(more.size());
  auto next = c.take(1 << 20);
  EXPECT_EQ(next.data, "unfinished\nnext\n");
  EXPECT_EQ(next.lines, 2);
  EXPECT_EQ(c.buffered_bytes(), 0u);
}

TEST(LineChunker, ACutChunkCountsItsOwnLinesAndLeavesTheRestCounted) {
  atl::os::LineChunker c;
  std::string lines;
  for (int i = 0; i < 100; ++i) lines += "0123456789\n";  // 11 bytes each
  c.feed(lines);
  auto first = c.take(11 * 40 + 5);
  EXPECT_EQ(first.data.size(), 11u * 40);
  EXPECT_EQ(first.lines, 40);
  auto second = c.take(1 << 20);
  EXPECT_EQ(second.lines, 60);
  EXPECT_EQ(first.data + second.data, lines);
}
