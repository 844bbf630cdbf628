#include "atl/core/unsent_output.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace atl {
namespace {

UnsentChunk chunk(std::int32_t rank, std::int32_t attempt, std::int64_t offset, std::string bytes,
                  std::int32_t lines = 1) {
  return {StreamId::of_rank(rank), attempt, offset, std::move(bytes), lines};
}

TEST(UnsentOutput, ChunksComeOutInTheOrderTheyWereKept) {
  UnsentOutput kept;
  EXPECT_TRUE(kept.empty());
  EXPECT_FALSE(kept.take().has_value());
  kept.keep(chunk(0, 1, 0, "a\n"));
  kept.keep(chunk(1, 1, 0, "b\n"));
  EXPECT_EQ(kept.chunks(), 2u);
  EXPECT_EQ(kept.bytes(), 4u);
  auto first = kept.take();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->stream, StreamId::of_rank(0));
  EXPECT_EQ(first->bytes, "a\n");
  EXPECT_EQ(kept.bytes(), 2u);
  EXPECT_EQ(kept.take()->stream, StreamId::of_rank(1));
  EXPECT_TRUE(kept.empty());
  EXPECT_EQ(kept.bytes(), 0u);
}

TEST(UnsentOutput, AChunkThatFollowsTheLastOfItsStreamIsMergedIntoIt) {
  UnsentOutput kept;
  kept.keep(chunk(0, 1, 10, "a\n", 1));
  kept.keep(chunk(1, 1, 0, "x\n", 1));  // another rank in between
  kept.keep(chunk(0, 1, 12, "b\nc\n", 2));
  ASSERT_EQ(kept.chunks(), 2u);
  auto first = kept.take();
  EXPECT_EQ(first->offset, 10);
  EXPECT_EQ(first->bytes, "a\nb\nc\n");
  EXPECT_EQ(first->lines, 3);
}

TEST(UnsentOutput, ChunksWithAGapAnotherAttemptOrPastTheChunkSizeStayApart) {
  UnsentOutput kept;
  kept.keep(chunk(0, 1, 0, "a\n"));
  kept.keep(chunk(0, 1, 5, "b\n"));  // 2..4 never came
  kept.keep(chunk(0, 2, 7, "c\n"));  // the next attempt's process
  EXPECT_EQ(kept.chunks(), 3u);
  UnsentOutput big;
  big.keep(chunk(0, 1, 0, std::string(UnsentOutput::kMaxChunkBytes - 1, 'x')));
  big.keep(chunk(0, 1, static_cast<std::int64_t>(UnsentOutput::kMaxChunkBytes - 1), "yy"));
  EXPECT_EQ(big.chunks(), 2u);
  // Only the last chunk of a stream takes more: an earlier one never grows.
  UnsentOutput order;
  order.keep(chunk(0, 1, 0, "a\n"));
  order.keep(chunk(0, 1, 9, "b\n"));
  order.keep(chunk(0, 1, 2, "c\n"));
  EXPECT_EQ(order.chunks(), 3u);
}

TEST(UnsentOutput, PastItsLimitAChunkIsDroppedAndCounted) {
  UnsentOutput kept(10);
  kept.keep(chunk(0, 1, 0, "12345678"));
  kept.keep(chunk(0, 1, 8, "abc"));  // would make 11
  EXPECT_EQ(kept.bytes(), 8u);
  EXPECT_EQ(kept.dropped_bytes(), 3);
  kept.keep(chunk(1, 1, 0, "zz"));  // fits
  EXPECT_EQ(kept.bytes(), 10u);
  EXPECT_EQ(kept.dropped_bytes(), 3);
  kept.keep(chunk(1, 1, 2, ""));  // nothing to keep
  EXPECT_EQ(kept.chunks(), 2u);
}

TEST(UnsentOutput, ATakenChunkGivenBackComesOutFirstAgainAndIsNotMergedInto) {
  UnsentOutput kept(4);
  kept.keep(chunk(0, 1, 0, "ab"));
  kept.keep(chunk(1, 1, 0, "cd"));
  auto taken = kept.take();
  kept.keep(chunk(0, 1, 2, "ef"));  // taken is out: not merged into it
  kept.give_back(std::move(*taken));
  EXPECT_EQ(kept.bytes(), 6u);  // over the limit: it was held already
  EXPECT_EQ(kept.chunks(), 3u);
  EXPECT_EQ(kept.take()->bytes, "ab");
  EXPECT_EQ(kept.take()->bytes, "cd");
  EXPECT_EQ(kept.take()->bytes, "ef");
}

TEST(UnsentOutput, PumpsKeepingAtOnceLoseNothing) {
  UnsentOutput kept;
  std::vector<std::thread> pumps;
  for (int rank = 0; rank < 4; ++rank) {
    pumps.emplace_back([&kept, rank] {
      for (int i = 0; i < 1000; ++i) kept.keep(chunk(rank, 1, i * 2, "x\n"));
    });
  }
  for (auto& t : pumps) t.join();
  EXPECT_EQ(kept.bytes(), 8000u);
  std::size_t lines = 0;
  while (auto c = kept.take()) lines += static_cast<std::size_t>(c->lines);
  EXPECT_EQ(lines, 4000u);
}

TEST(BytesAlreadyKept, TheHeadWritesOnlyWhatItsFileLacks) {
  EXPECT_EQ(bytes_already_kept(0, 0, 10), 0u);       // nothing there
  EXPECT_EQ(bytes_already_kept(100, 100, 10), 0u);   // the file ends where it begins
  EXPECT_EQ(bytes_already_kept(104, 100, 10), 4u);   // the first 4 came before the cut
  EXPECT_EQ(bytes_already_kept(110, 100, 10), 10u);  // all of it came, its ack did not
  EXPECT_EQ(bytes_already_kept(500, 100, 10), 10u);
  EXPECT_EQ(bytes_already_kept(90, 100, 10), 0u);  // a gap before it: written whole
  EXPECT_EQ(bytes_already_kept(-1, 0, 10), 0u);    // the file's size unknown
}

TEST(KeptOutput, TheHeadTakesOnlyAUserCodesChunkWithinAPodsBounds) {
  EXPECT_TRUE((KeptOutput{chunk(3, 2, 0, "loss 0.1\n"), "j-worker-1"}.well_formed()));
  EXPECT_TRUE((KeptOutput{{StreamId::driver(), 1, 7, "x", 1}, "j-head"}.well_formed()));
  // A debug run's or a pod's own log: not what a pod keeps through a cut.
  EXPECT_FALSE((KeptOutput{{StreamId::of_run(4, 0), 1, 0, "x", 1}, "p"}.well_formed()));
  EXPECT_FALSE((KeptOutput{{StreamId::pod_log(1), 1, 0, "x", 1}, "p"}.well_formed()));
  EXPECT_FALSE((KeptOutput{chunk(0, 0, 0, "x"), "p"}.well_formed())) << "attempt 0";
  EXPECT_FALSE((KeptOutput{chunk(0, 1, -1, "x"), "p"}.well_formed())) << "negative offset";
  EXPECT_FALSE((KeptOutput{chunk(0, 1, 0, "x", -1), "p"}.well_formed())) << "negative lines";
  EXPECT_TRUE((KeptOutput{chunk(0, 1, 0, std::string(UnsentOutput::kMaxChunkBytes, 'a')), "p"}
                   .well_formed()));
  EXPECT_FALSE((KeptOutput{chunk(0, 1, 0, std::string(UnsentOutput::kMaxChunkBytes + 1, 'a')), "p"}
                    .well_formed()))
      << "larger than a pod's store ever merges";
}

}  // namespace
}  // namespace atl
