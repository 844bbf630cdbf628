#include "atl/core/log_times.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using atl::LogTime;

namespace {

std::string file_of(const std::vector<LogTime>& times) {
  std::string out;
  for (const auto& t : times) out += atl::encode_log_time(t);
  return out;
}

// 2026-12-03T16:45:31.188Z
constexpr std::int64_t kT = 1796316331188;

}  // namespace

TEST(LogTimes, RecordsRoundTrip) {
  std::vector<LogTime> times{{0, kT}, {120, kT + 50}, {4096, kT + 61'000}, {1LL << 40, 1}};
  std::string bytes = file_of(times);
  EXPECT_EQ(bytes.size(), 4 * atl::kLogTimeRecordSize);
  EXPECT_EQ(atl::decode_log_times(bytes), times);
}

TEST(LogTimes, ATornLastRecordAndRecordsGoingBackAreLeftOut) {
  std::string bytes = file_of({{0, kT}, {100, kT + 100}, {50, kT + 200}, {300, kT + 300}});
  bytes += atl::encode_log_time({400, kT + 400}).substr(0, 9);  // a crash mid-write
  EXPECT_EQ(atl::decode_log_times(bytes),
            (std::vector<LogTime>{{0, kT}, {100, kT + 100}, {300, kT + 300}}));
  EXPECT_TRUE(atl::decode_log_times("").empty());
  EXPECT_TRUE(atl::decode_log_times("short").empty());
  EXPECT_TRUE(atl::decode_log_times(file_of({{-5, kT}})).empty()) << "a negative offset";
}

TEST(LogTimes, SinceFindsTheFirstChunkAtOrAfterTheTime) {
  std::vector<LogTime> times{{0, kT}, {100, kT + 1000}, {250, kT + 2000}};
  EXPECT_EQ(atl::log_offset_since(times, kT - 5000), 0);
  EXPECT_EQ(atl::log_offset_since(times, kT), 0);
  EXPECT_EQ(atl::log_offset_since(times, kT + 1), 100);
  EXPECT_EQ(atl::log_offset_since(times, kT + 2000), 250);
  EXPECT_EQ(atl::log_offset_since(times, kT + 2001), -1) << "nothing since";
  EXPECT_EQ(atl::log_offset_since({}, kT), -1);
}

TEST(LogTimes, AByteTakesTheTimeOfTheRecordAtOrBeforeIt) {
  std::vector<LogTime> times{{10, kT}, {100, kT + 1000}};
  EXPECT_EQ(atl::log_time_at(times, 0), 0) << "before the first record: unknown";
  EXPECT_EQ(atl::log_time_at(times, 10), kT);
  EXPECT_EQ(atl::log_time_at(times, 99), kT);
  EXPECT_EQ(atl::log_time_at(times, 100), kT + 1000);
  EXPECT_EQ(atl::log_time_at(times, 1 << 30), kT + 1000);
  EXPECT_EQ(atl::log_time_at({}, 5), 0);
}

TEST(LogTimes, UtcWithMilliseconds) {
  EXPECT_EQ(atl::format_utc_ms(kT), "2026-12-03T16:45:31.188Z");
  EXPECT_EQ(atl::format_utc_ms(1000), "1970-01-01T00:00:01.000Z");
  EXPECT_EQ(atl::format_utc_ms(951782400007), "2000-02-29T00:00:00.007Z");
}

TEST(LogTimes, EachLineIsStampedWithTheTimeOfItsFirstByte) {
  // "a\nbb\n" came at kT, "ccc\nd\n" (from offset 5) a second later.
  std::vector<LogTime> times{{0, kT}, {5, kT + 1000}};
  EXPECT_EQ(atl::stamp_log_lines("a\nbb\nccc\nd\n", 0, times),
            "2026-12-03T16:45:31.188Z a\n2026-12-03T16:45:31.188Z bb\n"
            "2026-12-03T16:45:32.188Z ccc\n2026-12-03T16:45:32.188Z d\n");
  // Read from offset 5: offsets are the file's, not the piece's.
  EXPECT_EQ(atl::stamp_log_lines("ccc\n", 5, times), "2026-12-03T16:45:32.188Z ccc\n");
  // An unfinished last line is stamped too; a file with no record reads "-".
  EXPECT_EQ(atl::stamp_log_lines("x\ny", 5, times),
            "2026-12-03T16:45:32.188Z x\n2026-12-03T16:45:32.188Z y");
  EXPECT_EQ(atl::stamp_log_lines("x\n", 0, {}), "- x\n");
  EXPECT_EQ(atl::stamp_log_lines("", 0, times), "");
}
