// DebugCourse: atlctl stop and recover as operations, with their callers as
// ReplyIds and their answers and timers as effects. No CAF, no processes.
#include "atl/supervisor/debug_course.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "atl/core/log_stream.hpp"
#include "atl/supervisor/reply_book.hpp"

namespace {

using atl::JobMode;
using atl::Millis;
using atl::RankTable;
using atl::ReplyCode;
using atl::supervisor::DebugCourse;
using atl::supervisor::DebugEffects;
using atl::supervisor::DebugView;
using atl::supervisor::LaunchScope;
using atl::supervisor::ReplyBook;
using atl::supervisor::ReplyId;
using atl::supervisor::RunId;
using atl::supervisor::StopTarget;
namespace debug = atl::supervisor::debug;

using std::chrono::seconds;

// A job as the course sees it: user code's ranks and debug runs' ranks.
struct Job {
  JobMode mode = JobMode::spmd;
  RankTable code;
  std::map<RunId, RankTable> runs;
  atl::RayProcesses ray;
  mutable int statuses_built = 0;

  DebugView view() const {
    DebugView v;
    v.mode = mode;
    v.code = &code;
    v.ray = ray;
    v.run = [this](RunId id) -> const RankTable* {
      auto it = runs.find(id);
      return it == runs.end() ? nullptr : &it->second;
    };
    v.status = [this](RunId id) { return status(id); };
    v.gone = [](RunId id) { return "run " + std::to_string(id) + " was dropped"; };
    return v;
  }
  // A run's status as the shell's run_status makes it (a record per rank).
  atl::RunStatus status(RunId id) const {
    ++statuses_built;
    atl::RunStatus out;
    out.run = id;
    const RankTable& ranks = runs.at(id);
    out.done = ranks.all_done();
    for (const auto& [rank, r] : ranks) {
      atl::RunRankStatus rs;
      rs.rank = rank;
      rs.pod = r.pod;
      rs.started = r.started;
      rs.done = r.done;
      out.ranks.push_back(rs);
    }
    return out;
  }
  void ranks(int n, bool started) {
    code.clear();
    for (int r = 0; r < n; ++r) {
      code.add(r, "pod-" + std::to_string(r / 2));
      if (started) code.mark_started(r, 100 + r);
    }
  }
};

std::vector<debug::Answer> answers(const DebugEffects& out) {
  std::vector<debug::Answer> got;
  for (const auto& e : out)
    if (const auto* a = std::get_if<debug::Answer>(&e)) got.push_back(*a);
  return got;
}

TEST(DebugCourse, EachStopIsAnOperationAndOnlyTheLatestTimerCounts) {
  Job job;
  job.ranks(2, true);
  DebugCourse course;
  EXPECT_EQ(course.await_stop(1, 7), DebugCourse::StopWait::unknown);
  DebugEffects out;
  const auto first = course.begin_stop(StopTarget{true, 0}, seconds(12), job.view(), out);
  EXPECT_EQ(first, 1);
  ASSERT_EQ(out.size(), 1u);
  const auto* timer = std::get_if<debug::ArmStopTimer>(&out[0]);
  ASSERT_TRUE(timer);
  EXPECT_EQ(timer->stop, first);
  EXPECT_EQ(timer->after, seconds(12));
  ASSERT_TRUE(course.stopping());
  EXPECT_EQ(course.stop_state(first), DebugCourse::StopWait::pending);
  EXPECT_EQ(course.owed(), 0u);  // asking keeps nobody
  EXPECT_EQ(course.await_stop(first, 7), DebugCourse::StopWait::pending);
  EXPECT_EQ(course.owed(), 1u);
  // Rank 1 ends, rank 0 never does: the timer gives the stop up and says who.
  job.code.mark_done(1, 0, 15, "");
  out.clear();
  course.on_stop_timer(first, seconds(11), job.view(), out);
  auto got = answers(out);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].reply, 7u);
  EXPECT_EQ(got[0].code, ReplyCode::failed);
  EXPECT_EQ(got[0].text, "ranks 0 did not report their end within 11s");
  EXPECT_FALSE(course.stopping());
  EXPECT_EQ(course.await_stop(first, 8), DebugCourse::StopWait::over);
  EXPECT_EQ(course.owed(), 0u);  // an answer now keeps nobody either
  out.clear();
  course.on_stop_timer(first, seconds(11), job.view(), out);  // a late timer: nothing
  EXPECT_TRUE(out.empty());
  // The next stop (of a debug run): the first's timer is nothing to it.
  job.runs[4].add(1, "pod-0");
  out.clear();
  const auto second = course.begin_stop(StopTarget{false, 4}, seconds(11), job.view(), out);
  EXPECT_EQ(second, 2);
  EXPECT_EQ(course.await_stop(second, 9), DebugCourse::StopWait::pending);
  out.clear();
  course.on_stop_timer(first, seconds(11), job.view(), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(course.await_stop(3, 10), DebugCourse::StopWait::unknown);
  EXPECT_EQ(course.await_stop(0, 10), DebugCourse::StopWait::unknown);
  EXPECT_EQ(course.still_stopping(job.view()), "ranks 1 of debug run 4");
}

TEST(DebugCourse, AStopOfNothingRunningIsOverAtOnce) {
  Job job;
  job.ranks(2, true);
  job.code.end_remaining("ended");
  DebugCourse course;
  DebugEffects out;
  const auto op = course.begin_stop(StopTarget{true, 0}, seconds(11), job.view(), out);
  EXPECT_FALSE(course.stopping());
  EXPECT_EQ(course.await_stop(op, 1), DebugCourse::StopWait::over);
  EXPECT_EQ(course.owed(), 0u);
}

TEST(DebugCourse, EveryStopWaitHearsOkOnceTheLastRankEnds) {
  Job job;
  job.ranks(2, true);
  DebugCourse course;
  DebugEffects out;
  const auto op = course.begin_stop(StopTarget{true, 0}, seconds(11), job.view(), out);
  course.await_stop(op, 1);
  course.await_stop(op, 2);
  job.code.mark_done(0, 0, 15, "");
  out.clear();
  course.on_progress(job.view(), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(course.still_stopping(job.view()), "ranks 1");
  job.code.mark_done(1, 0, 15, "");
  course.on_progress(job.view(), out);
  auto got = answers(out);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].reply, 1u);
  EXPECT_EQ(got[1].reply, 2u);
  EXPECT_EQ(got[0].code, ReplyCode::ok);
  EXPECT_EQ(course.owed(), 0u);
}

TEST(DebugCourse, InRayModeAStopWaitsForTheDriverAloneTheClusterStaysUp) {
  Job job;
  job.mode = JobMode::ray;
  job.code.add(atl::kDriverStream, "head");
  job.code.add(atl::kRayHeadStream, "head");
  job.code.add(0, "pod-0");
  for (std::int32_t s : {atl::kDriverStream, atl::kRayHeadStream, 0}) job.code.mark_started(s, 5);
  DebugCourse course;
  DebugEffects out;
  const auto op = course.begin_stop(StopTarget{true, 0}, seconds(11), job.view(), out);
  course.await_stop(op, 1);
  EXPECT_EQ(course.still_stopping(job.view()), "the driver");
  job.code.mark_done(atl::kDriverStream, 1, 0, "");
  out.clear();
  course.on_progress(job.view(), out);
  ASSERT_EQ(answers(out).size(), 1u);
  EXPECT_EQ(answers(out)[0].code, ReplyCode::ok);
  // The Ray nodes up, the driver ended: recover starts the driver alone.
  job.ray = atl::RayProcesses{true, 2, 0};
  auto scope = course.recover_scope(job.view());
  ASSERT_TRUE(scope) << scope.error();
  EXPECT_EQ(*scope, LaunchScope::driver_only);
  // A Ray node ended while the rest still stop: refused, saying who.
  job.ray = atl::RayProcesses{true, 1, 1};
  EXPECT_FALSE(course.recover_scope(job.view()));
  job.ray = atl::RayProcesses{true, 0, 2};  // all gone: everything again
  ASSERT_TRUE(course.recover_scope(job.view()));
  EXPECT_EQ(*course.recover_scope(job.view()), LaunchScope::everything);
  job.ray = atl::RayProcesses{false, 2, 0};
  auto refused = course.recover_scope(job.view());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(),
            "job is in state debugStop but ranks ray-head,0 are still stopping; retry recover in "
            "a moment");
}

TEST(DebugCourse, ARecoverIsRefusedWhileAnyRankStillStops) {
  Job job;
  job.ranks(3, true);
  DebugCourse course;
  DebugEffects out;
  course.begin_stop(StopTarget{true, 0}, seconds(11), job.view(), out);
  job.code.mark_done(0, 0, 15, "");
  auto refused = course.recover_scope(job.view());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(),
            "job is in state debugStop but ranks 1,2 are still stopping; retry recover in a "
            "moment");
  job.code.end_remaining("stopped");
  out.clear();
  course.on_progress(job.view(), out);
  auto scope = course.recover_scope(job.view());
  ASSERT_TRUE(scope);
  EXPECT_EQ(*scope, LaunchScope::everything);
}

TEST(DebugCourse, ARecoverIsAnsweredOnceEveryRankStartedOrFailedByItsOwnTimer) {
  Job job;
  job.ranks(2, false);  // the recover's attempt, launched
  DebugCourse course;
  DebugEffects out;
  course.recovering(5, 2, job.view(), out);
  ASSERT_EQ(out.size(), 1u);
  const auto* timer = std::get_if<debug::ArmRecoverTimer>(&out[0]);
  ASSERT_TRUE(timer);
  EXPECT_EQ(timer->attempt, 2);
  EXPECT_EQ(timer->after, DebugCourse::kStartTimeout);
  job.code.mark_started(0, 10);
  out.clear();
  course.on_progress(job.view(), out);
  EXPECT_TRUE(out.empty());
  out.clear();
  course.on_recover_timer(1, job.view(), out);  // an older attempt's timer
  EXPECT_TRUE(out.empty());
  course.on_recover_timer(2, job.view(), out);
  auto got = answers(out);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].reply, 5u);
  EXPECT_EQ(got[0].code, ReplyCode::failed);
  EXPECT_EQ(got[0].text, "ranks 1 did not start within 30s");
  EXPECT_EQ(course.owed(), 0u);
  // The next recover's ranks all start: answered ok, its timer later is moot.
  job.ranks(2, false);
  out.clear();
  course.recovering(6, 3, job.view(), out);
  job.code.mark_started(0, 10);
  job.code.mark_started(1, 11);
  out.clear();
  course.on_progress(job.view(), out);
  got = answers(out);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].reply, 6u);
  EXPECT_EQ(got[0].code, ReplyCode::ok);
  out.clear();
  course.on_recover_timer(3, job.view(), out);
  EXPECT_TRUE(out.empty());
}

TEST(DebugCourse, ARecoverWithNothingToStartIsAnsweredAtOnce) {
  Job job;
  DebugCourse course;
  DebugEffects out;
  course.recovering(1, 2, job.view(), out);
  auto got = answers(out);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].code, ReplyCode::ok);
}

// The guide's second operator: A stops, B recovers before A's stop_wait
// arrives; A's stop_wait must find its stop over, not the new attempt running.
TEST(DebugCourse, AStopWaitAfterAnotherOperatorsRecoverFindsItsStopOver) {
  Job job;
  job.ranks(2, true);
  DebugCourse course;
  DebugEffects out;
  const auto op = course.begin_stop(StopTarget{true, 0}, seconds(11), job.view(), out);
  job.code.end_remaining("stopped");
  course.on_progress(job.view(), out);  // settled, nobody waited
  job.ranks(2, false);                  // B's recover launched attempt 2
  course.recovering(1, 2, job.view(), out);
  EXPECT_EQ(course.await_stop(op, 2), DebugCourse::StopWait::over);
}

TEST(DebugCourse, AbandonTellsEveryStopWaitAndTheRecoverWhy) {
  Job job;
  job.ranks(2, true);
  DebugCourse course;
  DebugEffects out;
  const auto op = course.begin_stop(StopTarget{true, 0}, seconds(11), job.view(), out);
  course.await_stop(op, 1);
  RankTable starting;
  starting.add(0, "pod-0");
  Job other;
  other.code = starting;
  course.recovering(2, 2, other.view(), out);
  out.clear();
  course.abandon("the job ended (failed)", job.view(), out);
  auto got = answers(out);
  ASSERT_EQ(got.size(), 2u);
  for (const auto& a : got) {
    EXPECT_EQ(a.code, ReplyCode::failed);
    EXPECT_EQ(a.text, "the job ended (failed)");
  }
  EXPECT_EQ(course.owed(), 0u);
  out.clear();
  course.abandon("again", job.view(), out);
  EXPECT_TRUE(out.empty());
}

std::vector<debug::AnswerRun> run_answers(const DebugEffects& out) {
  std::vector<debug::AnswerRun> got;
  for (const auto& e : out)
    if (const auto* a = std::get_if<debug::AnswerRun>(&e)) got.push_back(*a);
  return got;
}

TEST(DebugCourse, ARunIsAnsweredOnceEveryRankStartedAndItsWaitsOnceItEnded) {
  Job job;
  job.runs[3].add(0, "pod-0");
  job.runs[3].add(1, "pod-1");
  DebugCourse course;
  DebugEffects out;
  course.run_opened(3, 11, out);
  ASSERT_EQ(out.size(), 1u);
  const auto* timer = std::get_if<debug::ArmRunStartTimer>(&out[0]);
  ASSERT_TRUE(timer);
  EXPECT_EQ(timer->run, 3);
  EXPECT_EQ(timer->after, DebugCourse::kStartTimeout);
  job.runs[3].mark_started(0, 50);
  out.clear();
  course.on_run_progress(3, job.view(), out);
  EXPECT_TRUE(out.empty());
  job.runs[3].mark_done(1, 127, 0, "");  // ended before it started: it will not start
  course.on_run_progress(3, job.view(), out);
  auto got = run_answers(out);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].reply, 11u);
  EXPECT_EQ(got[0].code, ReplyCode::ok);
  EXPECT_EQ(got[0].status.run, 3);
  // Two run_waits; the run ends: both hear its end, oldest first.
  out.clear();
  course.await_run(3, 12, std::chrono::seconds(5), out);
  course.await_run(3, 13, Millis(0), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(std::get<debug::ArmWaitTimer>(out[1]).after, Millis(1));  // never 0
  const auto first_waiter = std::get<debug::ArmWaitTimer>(out[0]).waiter;
  job.runs[3].mark_done(0, 0, 0, "");
  out.clear();
  course.on_run_progress(3, job.view(), out);
  got = run_answers(out);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].reply, 12u);
  EXPECT_EQ(got[1].reply, 13u);
  EXPECT_TRUE(got[0].status.done);
  out.clear();
  course.on_run_wait_timer(first_waiter, job.view(), out);  // answered: nothing
  course.on_run_start_timer(3, job.view(), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(course.owed(), 0u);
}

// A fan-out to 8,000 ranks reports 16,000 times: the run's status (8,000
// records) is built for the answers only, not per report (that was 128
// million records, seconds in which 1,000 pods' heartbeats went unread).
TEST(DebugCourse, ARunsStatusIsBuiltOnlyForTheAnswersNotForEveryReport) {
  Job job;
  const int ranks = 2000;
  for (int r = 0; r < ranks; ++r) job.runs[9].add(r, "pod-" + std::to_string(r / 8));
  DebugCourse course;
  DebugEffects out;
  course.run_opened(9, 1, out);
  course.await_run(9, 2, std::chrono::seconds(60), out);
  for (int r = 0; r < ranks; ++r) {
    job.runs[9].mark_started(r, 100 + r);
    course.on_run_progress(9, job.view(), out);
  }
  for (int r = 0; r < ranks; ++r) {
    job.runs[9].mark_done(r, 0, 0, "");
    course.on_run_progress(9, job.view(), out);
  }
  auto got = run_answers(out);
  ASSERT_EQ(got.size(), 2u);  // the start, then the wait
  EXPECT_TRUE(got[1].status.done);
  EXPECT_EQ(job.statuses_built, 2);
  EXPECT_FALSE(course.run_answer_due(9, job.runs[9]));  // answered: nothing due
  EXPECT_FALSE(course.wants_progress());                // no stop, no recover
}

TEST(DebugCourse, ARunWaitsDeadlineAnswersTheRunAsItIsOrThatItWasDropped) {
  Job job;
  job.runs[4].add(0, "pod-0");
  job.runs[4].mark_started(0, 50);
  DebugCourse course;
  DebugEffects out;
  course.await_run(4, 21, std::chrono::seconds(2), out);
  course.await_run(4, 22, std::chrono::seconds(9), out);
  const auto w1 = std::get<debug::ArmWaitTimer>(out[0]).waiter;
  const auto w2 = std::get<debug::ArmWaitTimer>(out[1]).waiter;
  out.clear();
  course.on_run_wait_timer(w1, job.view(), out);
  auto got = run_answers(out);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].reply, 21u);
  EXPECT_EQ(got[0].code, ReplyCode::ok);
  EXPECT_FALSE(got[0].status.done);
  job.runs.erase(4);  // ended and dropped from the history meanwhile
  out.clear();
  course.on_run_wait_timer(w2, job.view(), out);
  got = run_answers(out);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].code, ReplyCode::failed);
  EXPECT_EQ(got[0].text, "run 4 was dropped");
}

TEST(DebugCourse, ARunsStartTimerNamesTheRanksThatDidNotStart) {
  Job job;
  for (int r = 0; r < 3; ++r) job.runs[5].add(r, "pod-0");
  job.runs[5].mark_started(1, 50);
  DebugCourse course;
  DebugEffects out;
  course.run_opened(5, 31, out);
  out.clear();
  course.on_run_start_timer(6, job.view(), out);  // another run's: nothing
  EXPECT_TRUE(out.empty());
  course.on_run_start_timer(5, job.view(), out);
  auto got = run_answers(out);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].code, ReplyCode::failed);
  EXPECT_EQ(got[0].text, "ranks 0,2 did not start within 30s");
  EXPECT_EQ(got[0].status.ranks.size(), 3u);
  out.clear();
  job.runs[5].mark_started(0, 51);
  job.runs[5].mark_started(2, 52);
  course.on_run_progress(5, job.view(), out);  // answered already: once
  EXPECT_TRUE(out.empty());
}

TEST(DebugCourse, AbandonTellsEveryRunStartAndRunWaitWhy) {
  Job job;
  job.runs[1].add(0, "pod-0");
  DebugCourse course;
  DebugEffects out;
  course.run_opened(1, 41, out);
  course.await_run(1, 42, std::chrono::seconds(5), out);
  out.clear();
  course.abandon("the supervisor failed: boom", job.view(), out);
  auto got = run_answers(out);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].reply, 41u);
  EXPECT_EQ(got[0].status.run, 1);  // the start hears the run as it was
  EXPECT_EQ(got[1].reply, 42u);
  for (const auto& a : got) {
    EXPECT_EQ(a.code, ReplyCode::failed);
    EXPECT_EQ(a.text, "the supervisor failed: boom");
  }
  EXPECT_EQ(course.owed(), 0u);
}

TEST(ReplyBook, EachReplyIsTakenOnceAndTheRestOldestFirst) {
  ReplyBook<std::string> book;
  const ReplyId a = book.keep("a");
  const ReplyId b = book.keep("b");
  const ReplyId c = book.keep("c");
  EXPECT_NE(a, b);
  EXPECT_EQ(book.take(b), std::optional<std::string>("b"));
  EXPECT_FALSE(book.take(b));  // answered once
  EXPECT_FALSE(book.take(999));
  EXPECT_EQ(book.take_all(), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(book.size(), 0u);
  EXPECT_GT(book.keep("d"), c);  // ids are never reused
}

}  // namespace
