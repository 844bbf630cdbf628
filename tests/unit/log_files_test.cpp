// Reading growing log files: whole lines, restarts from the top after an
// attempt's new file, tails, and the listing the dashboard shows.
#include "atl/os/log_files.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "atl/core/log_times.hpp"

using namespace atl::os;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/atl-logfiles-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
  void write(const std::string& name, const std::string& text, bool append = false) {
    std::ofstream(path + "/" + name, append ? std::ios::app : std::ios::trunc) << text;
  }
};

}  // namespace

TEST(LogFiles, ReadsWholeLinesAndGoesOn) {
  TempDir d;
  d.write("rank-0.log", "one\ntwo\nthr");
  auto a = read_log(d.path + "/rank-0.log", 0, 1 << 20);
  EXPECT_EQ(a.bytes, "one\ntwo\n");
  EXPECT_EQ(a.next_offset, 8);
  // A last line without its end (a process that never wrote one) comes when
  // nothing else is left.
  auto b = read_log(d.path + "/rank-0.log", a.next_offset, 1 << 20);
  EXPECT_EQ(b.bytes, "thr");
  EXPECT_EQ(b.next_offset, 11);
  d.write("rank-0.log", "ee\nfour\n", true);
  EXPECT_EQ(read_log(d.path + "/rank-0.log", 11, 1 << 20).bytes, "ee\nfour\n");
  // max_bytes cuts at a line's end; a line longer than it comes in pieces.
  EXPECT_EQ(read_log(d.path + "/rank-0.log", 0, 9).bytes, "one\ntwo\n");
  EXPECT_EQ(read_log(d.path + "/rank-0.log", 0, 2).bytes, "on");
}

TEST(LogFiles, AnOffsetPastTheEndStartsANewAttemptsFileFromTheTop) {
  TempDir d;
  d.write("rank-0.log", "new\n");
  auto r = read_log(d.path + "/rank-0.log", 1000, 1 << 20);
  EXPECT_EQ(r.bytes, "new\n");
  EXPECT_EQ(r.next_offset, 4);
}

TEST(LogFiles, MissingFilesAndOddArguments) {
  TempDir d;
  auto r = read_log(d.path + "/nope.log", 5, 100);
  EXPECT_EQ(r.bytes, "");
  EXPECT_EQ(r.next_offset, 5);
  d.write("x.log", "a\n");
  EXPECT_EQ(read_log(d.path + "/x.log", -3, 100).bytes, "a\n");
  EXPECT_EQ(read_log(d.path + "/x.log", 0, -1).bytes, "");
  EXPECT_EQ(tail_log(d.path + "/nope.log", 3).bytes, "");
}

TEST(LogFiles, Tail) {
  TempDir d;
  d.write("r.log", "1\n2\n3\n4\n");
  EXPECT_EQ(tail_log(d.path + "/r.log", 2).bytes, "3\n4\n");
  EXPECT_EQ(tail_log(d.path + "/r.log", 2).next_offset, 8);
  EXPECT_EQ(tail_log(d.path + "/r.log", 10).bytes, "1\n2\n3\n4\n");
  EXPECT_EQ(tail_log(d.path + "/r.log", 0).bytes, "");
  EXPECT_EQ(tail_log(d.path + "/r.log", 0).next_offset, 8);
  // Across the 64 KiB blocks it reads backwards in.
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "line " + std::to_string(i) + "\n";
  d.write("big.log", big);
  EXPECT_EQ(tail_log(d.path + "/big.log", 2).bytes, "line 19998\nline 19999\n");
  EXPECT_EQ(tail_log(d.path + "/big.log", 20000).bytes, big);
}

TEST(LogFiles, ListsLogFilesByName) {
  TempDir d;
  d.write("rank-1.log", "abc\n");
  d.write("head.log", "");
  d.write("notes.txt", "x");
  d.write(".log", "x");
  ::mkdir((d.path + "/attempt-1").c_str(), 0755);
  ::mkdir((d.path + "/dir.log").c_str(), 0755);
  auto all = list_logs(d.path);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].stream, "head");
  EXPECT_EQ(all[0].bytes, 0);
  EXPECT_EQ(all[1].stream, "rank-1");
  EXPECT_EQ(all[1].bytes, 4);
  EXPECT_TRUE(list_logs(d.path + "/none").empty());
}

TEST(LogFiles, AFollowerThatFallsTooFarBehindSkipsToTheLastLines) {
  TempDir d;
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "line " + std::to_string(1000 + i) + "\n";  // 10 bytes
  d.write("r.log", text);
  const std::string path = d.path + "/r.log";
  // Close enough: an ordinary read.
  auto near = read_log_following(path, 9000, 1 << 20, 5000, 100);
  EXPECT_EQ(near.skipped, 0);
  EXPECT_EQ(near.bytes, text.substr(9000));
  // Too far: the last 100 bytes (whole lines) and how much was left out.
  auto far = read_log_following(path, 0, 1 << 20, 5000, 100);
  EXPECT_EQ(far.skipped, 9900);
  EXPECT_EQ(far.bytes, text.substr(9900));
  EXPECT_EQ(far.next_offset, 10000);
  // `keep` not on a line's start: the next line's start.
  auto odd = read_log_following(path, 0, 1 << 20, 5000, 95);
  EXPECT_EQ(odd.skipped, 9910);
  EXPECT_EQ(odd.bytes, text.substr(9910));
  // max_bytes still caps what comes.
  auto capped = read_log_following(path, 0, 20, 5000, 100);
  EXPECT_EQ(capped.bytes, "line 1990\nline 1991\n");
  // An offset of an earlier attempt (past the end): from the top, nothing skipped.
  auto earlier = read_log_following(path, 50000, 30, 5000, 100);
  EXPECT_EQ(earlier.skipped, 0);
  EXPECT_EQ(earlier.bytes, "line 1000\nline 1001\nline 1002\n");
  EXPECT_EQ(read_log_following(d.path + "/none.log", 7, 10, 1, 1).next_offset, 7);
}

TEST(LogFiles, ASearchReadsTheWholeLogAndCountsEveryMatch) {
  // `seq 5000` as a job prints it: "line 10" is in 111 lines (10, 100-109,
  // 1000-1099), the first far before any last 1,000 lines.
  TempDir d;
  std::string text;
  for (int i = 1; i <= 5000; ++i) text += "line " + std::to_string(i) + "\n";
  d.write("rank-0.log", text + "LINE 10 without its newline yet");
  auto m = search_log(d.path + "/rank-0.log", "line 10", 3);
  EXPECT_EQ(m.total, 112) << "111 and the last, in any case";
  EXPECT_EQ(m.lines, 5001);
  ASSERT_EQ(m.shown.size(), 3u);
  EXPECT_EQ(m.shown[0].line, 10);
  EXPECT_EQ(m.shown[0].text, "line 10");
  EXPECT_EQ(m.shown[0].offset, static_cast<std::int64_t>(text.find("line 10\n")));
  EXPECT_EQ(m.shown[1].line, 100);
  EXPECT_EQ(search_log(d.path + "/rank-0.log", "no such text", 3).total, 0);
  EXPECT_EQ(search_log(d.path + "/missing.log", "line", 3).total, 0);
  EXPECT_EQ(search_log(d.path + "/rank-0.log", "", 3).total, 0) << "nothing to look for";
}

namespace {

// The birth of a file in unix ms; nullopt where its file system keeps none.
std::optional<std::int64_t> born(const std::string& path) {
  struct statx sx {};
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_BTIME, &sx) != 0 || !(sx.stx_mask & STATX_BTIME))
    return std::nullopt;
  return static_cast<std::int64_t>(sx.stx_btime.tv_sec) * 1000 + sx.stx_btime.tv_nsec / 1000000;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// The head makes a stream's .times file at its second record: its first
// chunk's time is the log file's birth (one file less per rank per attempt).
// Readers put that record in front of the file's, and only where the file
// has none for offset 0 (an older head's files have one).
TEST(LogFiles, AStreamsFirstChunkIsTimedByItsFilesBirth) {
  TempDir d;
  const std::int64_t before = now_ms();
  d.write("rank-0.log", "a\nbb\nccc\n");
  const std::string log = d.path + "/rank-0.log";
  const auto birth = born(log);
  if (!birth) GTEST_SKIP() << "this file system keeps no birth times";
  EXPECT_GE(*birth, before - 1000);
  EXPECT_LE(*birth, now_ms() + 1000);
  // No .times file at all: every line is its first chunk's.
  EXPECT_EQ(stamp_log("a\nbb\n", log, 0), atl::stamp_log_lines("a\nbb\n", 0, {{0, *birth}}));
  EXPECT_EQ(log_offset_since(log, *birth), 0);
  EXPECT_EQ(log_offset_since(log, *birth + 1), 9);  // nothing since
  // The second record made the file: the first lines keep the birth.
  const std::int64_t later = *birth + 5000;
  d.write("rank-0.times", atl::encode_log_time({5, later}));
  EXPECT_EQ(stamp_log("a\nbb\nccc\n", log, 0),
            atl::stamp_log_lines("a\nbb\nccc\n", 0, {{0, *birth}, {5, later}}));
  EXPECT_EQ(stamp_log("ccc\n", log, 5), atl::stamp_log_lines("ccc\n", 5, {{5, later}}));
  EXPECT_EQ(log_offset_since(log, *birth + 1), 5);
  EXPECT_EQ(log_offset_since(log, later + 1), 9);
  // Through the link a rank's log is read by, too.
  ASSERT_EQ(::symlink("rank-0.log", (d.path + "/current.log").c_str()), 0);
  EXPECT_EQ(stamp_log("a\n", d.path + "/current.log", 0),
            atl::stamp_log_lines("a\n", 0, {{0, *birth}}));
  // A .times file with a record for offset 0 is read as it is.
  d.write("rank-0.times", atl::encode_log_time({0, 7}) + atl::encode_log_time({5, later}));
  EXPECT_EQ(stamp_log("a\n", log, 0), atl::stamp_log_lines("a\n", 0, {{0, 7}}));
  // A birth after the file's own records is a copy's (cp): not the first
  // chunk's time; the first lines read unstamped rather than wrong.
  d.write("rank-0.times", atl::encode_log_time({5, *birth - 60'000}));
  EXPECT_EQ(stamp_log("a\nbb\nccc\n", log, 0),
            atl::stamp_log_lines("a\nbb\nccc\n", 0, {{5, *birth - 60'000}}));
  // So is one after its last change (tar, kubectl cp, cp -a keep that).
  ::unlink((d.path + "/rank-0.times").c_str());
  const timespec past[2] = {{1'700'000'000, 0}, {1'700'000'000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, log.c_str(), past, 0), 0);
  EXPECT_EQ(stamp_log("a\n", log, 0), "- a\n");
}
