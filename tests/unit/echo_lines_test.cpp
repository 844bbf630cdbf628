#include "atl/os/echo_lines.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using atl::os::EchoBatches;
using atl::os::EchoPiece;

// Every write the batches make, each as the bytes it would write.
std::vector<std::string> writes(std::vector<EchoPiece> pieces, size_t max_iov, size_t atomic) {
  EchoBatches batches(std::move(pieces), max_iov, atomic);
  std::vector<std::string> out;
  for (auto w = batches.next(); w.count > 0; w = batches.next()) {
    std::string bytes;
    for (int i = 0; i < w.count; ++i)
      bytes.append(static_cast<const char*>(w.iov[i].iov_base), w.iov[i].iov_len);
    out.push_back(bytes);
  }
  return out;
}

std::string joined(const std::vector<std::string>& ws) {
  std::string all;
  for (const auto& w : ws) all += w;
  return all;
}

TEST(EchoBatches, EachLineGetsItsPrefixInOneWrite) {
  const std::string text = "a\nbb\nccc\n";
  auto ws = writes({{text, "[rank 0] "}}, 1024, 0);
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0], "[rank 0] a\n[rank 0] bb\n[rank 0] ccc\n");
}

TEST(EchoBatches, AChunkThatContinuesALineHasNoPrefixInTheMiddle) {
  // tqdm's redraw sent unfinished after 1 s, then the rest of its line.
  const std::string first = "10%\r20%";
  const std::string second = "\r100%\nnext\n";
  auto ws = writes({{first, "[rank 1] "}, {second, "[rank 1] ", true}}, 1024, 0);
  EXPECT_EQ(joined(ws), "[rank 1] 10%\r20%\r100%\n[rank 1] next\n");
}

TEST(EchoBatches, PrintedLinesHaveNoPrefix) {
  const std::string line = "[atl] job ended\n";
  EXPECT_EQ(joined(writes({{line, ""}}, 1024, 0)), line);
}

TEST(EchoBatches, AWriteHoldsAtMostMaxIovecsAndNoLineIsSplitAcrossWrites) {
  std::string text;
  for (int i = 0; i < 10; ++i) text += "line " + std::to_string(i) + "\n";
  auto ws = writes({{text, "> "}}, 6, 0);  // 3 prefixed lines per write
  ASSERT_EQ(ws.size(), 4u);
  EXPECT_EQ(ws[0], "> line 0\n> line 1\n> line 2\n");
  EXPECT_EQ(ws[3], "> line 9\n");
  std::string want;
  for (int i = 0; i < 10; ++i) want += "> line " + std::to_string(i) + "\n";
  EXPECT_EQ(joined(ws), want);
}

TEST(EchoBatches, OnAPipeEachWriteIsAtMostAtomicBytesCutAtALinesEnd) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += std::string(40, 'x') + "\n";  // 41 bytes
  auto ws = writes({{text, "[r] "}}, 1024, 200);                      // 45 per line
  for (const auto& w : ws) {
    EXPECT_LE(w.size(), 200u);
    EXPECT_EQ(w.back(), '\n');
    EXPECT_EQ(w.size() % 45, 0u);
  }
  EXPECT_EQ(ws.size(), 25u);  // 4 lines (180 bytes) per write
}

TEST(EchoBatches, ALineLongerThanAtomicBytesGoesAloneInItsOwnWrite) {
  const std::string text = "short\n" + std::string(500, 'y') + "\nafter\n";
  auto ws = writes({{text, "p "}}, 1024, 100);
  ASSERT_EQ(ws.size(), 3u);
  EXPECT_EQ(ws[0], "p short\n");
  EXPECT_EQ(ws[1], "p " + std::string(500, 'y') + "\n");
  EXPECT_EQ(ws[2], "p after\n");
}

TEST(EchoBatches, ManyChunksOfSeveralStreamsGoTogetherInOrder) {
  const std::string a = "a1\na2\n";
  const std::string b = "b1\n";
  const std::string c = "";
  auto ws = writes({{a, "[rank 0] "}, {c, "[rank 2] "}, {b, "[rank 1] "}}, 1024, 0);
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0], "[rank 0] a1\n[rank 0] a2\n[rank 1] b1\n");
}

TEST(EchoBatches, NothingToWriteMeansNoWrite) {
  EXPECT_TRUE(writes({}, 1024, 0).empty());
  EXPECT_TRUE(writes({{"", "x"}}, 1024, 4096).empty());
}

TEST(EchoBatches, AnUnfinishedLastLineIsWrittenAsItIs) {
  const std::string text = "done\n 50%";
  EXPECT_EQ(joined(writes({{text, "# "}}, 1024, 0)), "# done\n#  50%");
}

}  // namespace
