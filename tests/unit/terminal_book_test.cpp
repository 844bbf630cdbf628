#include "atl/supervisor/terminal_book.hpp"

#include <gtest/gtest.h>

namespace atl::supervisor {
namespace {

using namespace std::chrono_literals;
const auto t0 = TerminalBook::Clock::time_point{} + 1h;

TEST(TerminalBook, OpensWithFreshIdsAndClosesEachOnce) {
  TerminalBook book(TerminalSettings{});
  auto a = book.open("job-worker-0", true, "session 3f2a from 10.0.0.9", t0);
  ASSERT_TRUE(a.ok());
  auto b = book.open("job-worker-1", true, "session 3f2a from 10.0.0.9", t0 + 1s);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(a->id == b->id);
  EXPECT_EQ(book.open_count(), 2u);
  auto closed = book.close(a->id);
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(closed->pod, "job-worker-0");
  EXPECT_EQ(closed->who, "session 3f2a from 10.0.0.9");
  EXPECT_EQ(closed->opened, t0);
  // The browser and the shell may both report the end: one record only.
  EXPECT_FALSE(book.close(a->id).has_value());
  EXPECT_FALSE(book.close(TerminalId{999}).has_value());
  EXPECT_EQ(book.open_count(), 1u);
  // Ids are never reused.
  auto c = book.open("job-worker-0", true, "x", t0);
  ASSERT_TRUE(c.ok());
  EXPECT_GT(c->id.value, b->id.value);
}

TEST(TerminalBook, RefusesWhenOffForAPodNotInTheJobAndPastThePodsLimit) {
  TerminalBook off(TerminalSettings{false, 4});
  auto r = off.open("job-worker-0", true, "x", t0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "the web terminal is off on this job (headnode --web-terminal off)");
  EXPECT_EQ(off.open_count(), 0u);

  TerminalBook book(TerminalSettings{true, 2});
  r = book.open("job-worker-7", false, "x", t0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "no pod named 'job-worker-7' has joined the job");

  auto a = book.open("job-worker-0", true, "x", t0);
  ASSERT_TRUE(book.open("job-worker-0", true, "y", t0).ok());
  r = book.open("job-worker-0", true, "z", t0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(),
            "pod job-worker-0 has 2 terminals open already, its limit (headnode "
            "--web-terminal-limit)");
  EXPECT_EQ(book.open_count(), 2u);  // a refusal changes nothing
  // Another pod has its own limit; a closed terminal frees a place.
  EXPECT_TRUE(book.open("job-worker-1", true, "z", t0).ok());
  book.close(a->id);
  EXPECT_TRUE(book.open("job-worker-0", true, "z", t0).ok());
  EXPECT_EQ(book.open_on("job-worker-0").size(), 2u);
  EXPECT_EQ(book.open_on("job-worker-0").front().who, "y");  // oldest first
  EXPECT_TRUE(book.open_on("job-worker-9").empty());

  TerminalBook none(TerminalSettings{true, 0});
  EXPECT_FALSE(none.open("job-worker-0", true, "x", t0).ok());
}

TEST(TerminalBook, TheJobsTotalIsBoundedToo) {
  TerminalBook book(TerminalSettings{true, 4, 3});
  ASSERT_TRUE(book.open("job-worker-0", true, "x", t0).ok());
  ASSERT_TRUE(book.open("job-worker-1", true, "x", t0).ok());
  auto c = book.open("job-worker-2", true, "x", t0);
  ASSERT_TRUE(c.ok());
  auto r = book.open("job-worker-3", true, "x", t0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(),
            "the job has 3 terminals open already, the most a head serves: close one first");
  book.close(c->id);
  EXPECT_TRUE(book.open("job-worker-3", true, "x", t0).ok());
  EXPECT_EQ(TerminalSettings{}.total_limit, 64);
}

TEST(TerminalBook, DurationsReadAsAPersonSaysThem) {
  EXPECT_EQ(terminal_duration(0s), "0 s");
  EXPECT_EQ(terminal_duration(-5s), "0 s");
  EXPECT_EQ(terminal_duration(59s), "59 s");
  EXPECT_EQ(terminal_duration(184s), "3 min 4 s");
  EXPECT_EQ(terminal_duration(2h + 5min + 9s), "2 h 5 min");
}

}  // namespace
}  // namespace atl::supervisor
