// HangCourse in fake time (no sleeps, no processes): the watch per attempt,
// silence -> suspect -> two looks at the stacks -> hung naming the culprit's
// pod, looks that move (ranks at work) -> no verdict, late answers and
// timers of an older look or attempt acting on nothing, stragglers, and the
// verdict through the JobController: the culprit's node tainted, the spare
// taking its place, a restart.
#include "atl/supervisor/hang_course.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "atl/supervisor/job_controller.hpp"
#include "unit/fake_job_effects.hpp"

namespace atl::supervisor {
namespace {

using namespace std::chrono_literals;
using TimePoint = HangCourse::TimePoint;

// A rank's stack as py-spy prints it: its main thread in `function` of `file`.
std::string py_spy(const std::string& function, const std::string& file) {
  return "Thread 1 (idle): \"MainThread\"\n    " + function + " (" + file + ":10)\n    main (" +
         "train.py:50)\n";
}

template <class T>
std::vector<T> all(const HangEffects& effects) {
  std::vector<T> out;
  for (const auto& e : effects)
    if (auto* x = std::get_if<T>(&e)) out.push_back(*x);
  return out;
}

template <class T>
bool has(const HangEffects& effects) {
  return !all<T>(effects).empty();
}

// Four ranks on two pods (0, 1 on pod-a; 2, 3 on pod-b), sampled each second.
struct Course {
  HangCourse course{100};
  std::vector<std::string> rank_pods{"pod-a", "pod-a", "pod-b", "pod-b"};
  HangJob job;
  TimePoint now = TimePoint{} + 1h;
  std::vector<ProgressReport> samples;  // each rank's counters so far

  Course() {
    job.spmd_command = true;
    job.timeout = 10s;
    job.attempt = 1;
    job.rank_pods = &rank_pods;
    for (std::int32_t r = 0; r < 4; ++r) samples.push_back({r, 1, 0, 0, 0, 'S', 100 + r, 0, 0});
    EXPECT_TRUE(course.on_tick(job, now).empty());  // the watch starts for attempt 1
    EXPECT_TRUE(course.watch().watching());
  }
  // One second: each pod reports its ranks, then the liveness tick.
  HangEffects second() {
    now += 1s;
    HangEffects out;
    for (const std::string pod : {"pod-a", "pod-b"}) {
      std::vector<ProgressReport> mine;
      for (const auto& s : samples)
        if (rank_pods[static_cast<std::size_t>(s.rank)] == pod) mine.push_back(s);
      for (auto& e : course.on_progress(pod, mine, job, now)) out.push_back(std::move(e));
    }
    for (auto& e : course.on_tick(job, now)) out.push_back(std::move(e));
    return out;
  }
  // Seconds until the watch asks for stacks: that look's request. With
  // `computing`, every rank's CPU time grows all along (silent, at work).
  hang::TakeStacks until_look(int at_most = 30, bool computing = false) {
    for (int i = 0; i < at_most; ++i) {
      if (computing)
        for (auto& s : samples) s.cpu_ticks += 100;
      auto out = second();
      auto takes = all<hang::TakeStacks>(out);
      if (!takes.empty()) return takes.front();
    }
    ADD_FAILURE() << "no look within " << at_most << " s";
    return {};
  }
  // Every rank's stack: rank 1 in `odd`, the rest in all_reduce.
  std::vector<StackReport> stacks(const std::string& odd = "load_batch") const {
    std::vector<StackReport> out;
    for (std::int32_t r = 0; r < 4; ++r) {
      StackReport s;
      s.rank = r;
      s.attempt = job.attempt;
      s.tool = "py-spy";
      s.text = r == 1 ? py_spy(odd, "data.py") : py_spy("all_reduce", "distributed_c10d.py");
      out.push_back(s);
    }
    return out;
  }
};

TEST(HangCourse, RanksThatPrintAreNeverLookedAt) {
  Course c;
  for (int i = 0; i < 60; ++i) {
    c.samples[static_cast<std::size_t>(i % 4)].lines += 1;
    auto out = c.second();
    EXPECT_FALSE(has<hang::TakeStacks>(out)) << i;
    EXPECT_FALSE(has<hang::Hung>(out)) << i;
    if (i >= 4) {
      EXPECT_TRUE(has<hang::Progressed>(out)) << i;  // a new line each second
    }
  }
}

// The sparklines' progress age is the watch's own: a rank that signals
// progress (steps, no lines) is young, a silent one ages by the second.
TEST(HangCourse, TheTrendCarriesEachRanksProgressAgeAsTheWatchCountsIt) {
  Course c;
  for (int i = 0; i < 8; ++i) {
    c.samples[0].steps += 1;  // rank 0 says it progressed, silently
    c.second();
  }
  const auto* zero = c.course.trend().of(0);
  const auto* three = c.course.trend().of(3);
  ASSERT_NE(zero, nullptr);
  ASSERT_NE(three, nullptr);
  ASSERT_GE(three->size(), 3u);
  EXPECT_LE(zero->back().progress_age_ms, 1000);
  EXPECT_GE(three->back().progress_age_ms, 6000);
  EXPECT_GT(three->back().progress_age_ms, (*three)[three->size() - 2].progress_age_ms);
}

// Not watched (no hang timeout): the trend goes on without a progress age.
TEST(HangCourse, AnUnwatchedJobsTrendHasNoProgressAge) {
  Course c;
  c.job.timeout = 0s;
  for (int i = 0; i < 4; ++i) c.second();
  ASSERT_NE(c.course.trend().of(1), nullptr);
  EXPECT_EQ(c.course.trend().of(1)->back().progress_age_ms, -1);
}

TEST(HangCourse, SilenceIsLookedAtTwiceAndTheRankApartIsHungByItsPod) {
  Course c;
  auto first = c.until_look();
  EXPECT_EQ(first.round, 1);
  EXPECT_TRUE(first.no_stop.empty());  // nobody computes
  EXPECT_EQ(c.course.looking(), 1);
  auto out = c.course.on_stacks(first.round, c.stacks(), c.job, c.now);
  EXPECT_FALSE(has<hang::Hung>(out));  // one look proves nothing
  auto arm = all<hang::ArmSecondLook>(out);
  ASSERT_EQ(arm.size(), 1u);
  EXPECT_EQ(arm[0].attempt, 1);
  EXPECT_EQ(arm[0].after, HangCourse::kSecondLook);
  c.now += arm[0].after;
  out = c.course.on_second_look(1, c.job, c.now);
  auto second = all<hang::TakeStacks>(out);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].round, 2);
  out = c.course.on_stacks(2, c.stacks(), c.job, c.now);
  auto hung = all<hang::Hung>(out);
  ASSERT_EQ(hung.size(), 1u);
  EXPECT_EQ(hung[0].pods, std::vector<std::string>{"pod-a"});
  EXPECT_NE(hung[0].reason.find("rank 1"), std::string::npos) << hung[0].reason;
  EXPECT_EQ(c.course.looking(), 0);
}

TEST(HangCourse, StacksThatMovedBetweenTheLooksHangNobody) {
  Course c;
  auto first = c.until_look(30, true);  // silent, every rank computing
  auto out = c.course.on_stacks(first.round, c.stacks("load_batch"), c.job, c.now);
  out = c.course.on_second_look(1, c.job, c.now + 1s);
  auto second = all<hang::TakeStacks>(out);
  ASSERT_EQ(second.size(), 1u);
  out = c.course.on_stacks(second[0].round, c.stacks("augment"), c.job, c.now + 1s);
  EXPECT_FALSE(has<hang::Hung>(out));
  bool moved = false;
  for (const auto& r : all<hang::Record>(out))
    moved = moved || r.text.find("moved since the first look") != std::string::npos;
  EXPECT_TRUE(moved);
}

TEST(HangCourse, LateAnswersAndTimersOfAnOlderLookOrAttemptActOnNothing) {
  Course c;
  auto first = c.until_look();
  // An answer of a round never asked for, or of none under way: nothing.
  EXPECT_TRUE(c.course.on_stacks(first.round + 7, c.stacks(), c.job, c.now).empty());
  auto out = c.course.on_stacks(first.round, c.stacks(), c.job, c.now);
  ASSERT_TRUE(has<hang::ArmSecondLook>(out));
  // The same answer again (a duplicate, a retry): moot.
  EXPECT_TRUE(c.course.on_stacks(first.round, c.stacks(), c.job, c.now).empty());
  // A restart: attempt 2. The second look's timer of attempt 1 comes late.
  c.job.attempt = 2;
  for (auto& s : c.samples) s = {s.rank, 2, 0, 0, 0, 'S', s.pid, 0, 0};
  EXPECT_FALSE(has<hang::TakeStacks>(c.second()));  // a new watch for attempt 2
  EXPECT_TRUE(c.course.on_second_look(1, c.job, c.now).empty());
  // A look under way when the job leaves command: its answer is moot.
  auto look = c.until_look();
  c.job.spmd_command = false;
  c.second();
  EXPECT_FALSE(c.course.watch().watching());
  EXPECT_TRUE(c.course.on_stacks(look.round, c.stacks(), c.job, c.now).empty());
}

TEST(HangCourse, ARankSeenComputingIsLookedAtWithoutBeingStopped) {
  Course c;
  // Rank 0 evaluates alone (CPU grows), the others wait: silent all along.
  for (int i = 0; i < 30; ++i) {
    c.samples[0].cpu_ticks += 100;
    auto out = c.second();
    auto takes = all<hang::TakeStacks>(out);
    if (takes.empty()) continue;
    EXPECT_EQ(takes[0].no_stop, std::vector<std::int32_t>{0});
    return;
  }
  FAIL() << "no look at a job silent for 30 s";
}

TEST(HangCourse, FlightRecordsOfThisAttemptAreKeptEachLook) {
  Course c;
  auto first = c.until_look();
  auto reports = c.stacks();
  reports[2].flight_record = "{\"entries\": []}";
  auto stale = reports[3];
  stale.attempt = 0;  // an older attempt's rank: not this one's
  stale.flight_record = "{}";
  reports.push_back(stale);
  auto kept = all<hang::KeepFile>(c.course.on_stacks(first.round, reports, c.job, c.now));
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].attempt, 1);
  EXPECT_EQ(kept[0].name, "rank-2.flight-record.json");
  EXPECT_EQ(kept[0].text, "{\"entries\": []}");
}

TEST(HangCourse, ReportsFromAnotherPodOrAttemptAreNotTheRanks) {
  Course c;
  // pod-b speaks for rank 0 (pod-a's), and attempt 0's rank 1: both dropped.
  std::vector<ProgressReport> wrong{{0, 1, 50, 0, 0, 'S', 1, 0, 0}, {1, 0, 50, 0, 0, 'S', 1, 0, 0}};
  EXPECT_TRUE(c.course.on_progress("pod-b", wrong, c.job, c.now + 1s).empty());
  EXPECT_TRUE(c.course.vitals().figures(c.now + 1s).empty());
}

TEST(HangCourse, NoHangTimeoutMeansNoWatch) {
  Course c;
  c.job.timeout = 0s;
  for (int i = 0; i < 40; ++i) EXPECT_FALSE(has<hang::TakeStacks>(c.second()));
  EXPECT_FALSE(c.course.watch().watching());
}

// The controller's side, as the supervisor wires them: the verdict's pods
// go to JobController::on_hung, which taints the culprit's node and
// restarts on the spare.
TEST(HangCourse, AHungVerdictTaintsTheCulpritsNodeAndRestartsOnTheSpare) {
  JobSpec spec;
  spec.job_id = "j1";
  spec.workers = 2;  // and a third pod: the spare
  spec.max_restarts = 3;
  spec.grace = 5s;
  spec.ready_timeout = 60s;
  FakeEffects fx;
  for (int i = 0; i < 3; ++i) {
    const std::string pod = "j1-worker-" + std::to_string(i), node = "node-" + std::to_string(i);
    fx.pods.push_back({pod, i, node, true});
    fx.machines[pod] = node;
  }
  JobController ctl({spec, 0s}, &fx);
  ASSERT_TRUE(ctl.start(nullptr, fx.pods.size()));
  ctl.all_joined();
  fx.preflight_running = false;
  ctl.on_preflight_verdict({});
  ASSERT_EQ(ctl.state(), JobState::command);
  ASSERT_EQ(ctl.active(), (std::vector<std::string>{"j1-worker-0", "j1-worker-1"}));

  Course c;
  c.rank_pods = {"j1-worker-0", "j1-worker-0", "j1-worker-1", "j1-worker-1"};
  auto first = c.until_look();
  c.course.on_stacks(first.round, c.stacks(), c.job, c.now);
  auto second = all<hang::TakeStacks>(c.course.on_second_look(1, c.job, c.now + 1s));
  ASSERT_EQ(second.size(), 1u);
  auto hung = all<hang::Hung>(c.course.on_stacks(second[0].round, c.stacks(), c.job, c.now + 1s));
  ASSERT_EQ(hung.size(), 1u);
  ctl.on_hung(hung[0].pods, hung[0].reason);  // as the shell hands it on

  EXPECT_TRUE(ctl.taints().tainted("node-0")) << "rank 1 is on j1-worker-0 (node-0)";
  EXPECT_EQ(ctl.state(), JobState::restarting);
  EXPECT_EQ(ctl.restarts().used(), 1);
  ASSERT_FALSE(ctl.restarts().history().empty());
  EXPECT_EQ(ctl.restarts().history().back().kind, FaultKind::job_hung);
  EXPECT_TRUE(fx.called("stop_user_code"));
  fx.done = true;  // the stopped ranks are gone
  ctl.maybe_relaunch();
  EXPECT_EQ(ctl.active(), (std::vector<std::string>{"j1-worker-1", "j1-worker-2"}));
}

}  // namespace
}  // namespace atl::supervisor
