// The GPU-side rules that run without a GPU: timing windows (through a fake
// device), the no-fallback rule, world size 1, NVML's readings judged from
// recorded values (an H200's, and broken ones), the stuck-phase monitor,
// sweeps, lagging GPUs and the tolerant spot check of random GEMMs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>

#include "atl/gpu/backend.hpp"
#include "atl/gpu/burn_types.hpp"
#include "atl/gpu/device_math.hpp"
#include "atl/gpu/metrics.hpp"
#include "atl/gpu/nvml_health.hpp"
#include "atl/gpu/phase_monitor.hpp"
#include "atl/gpu/ticker.hpp"
#include "atl/gpu/timing.hpp"
#include "atl/gpu/verify.hpp"

using namespace atl::gpu;
using namespace std::chrono_literals;

namespace {

// A device whose iterations take `per_iteration` of a fake clock; records
// what the timing loop asked of it.
struct FakeWork : TimedWork {
  std::chrono::steady_clock::time_point now{};
  std::chrono::microseconds per_iteration{1000};
  std::vector<int> untimed_batches;
  int timed_calls = 0, timed_count = 0;
  std::chrono::steady_clock::time_point timed_at{};
  std::vector<double> answer;  // what timed() returns; empty: per_iteration each
  bool fail_untimed = false;

  atl::Status untimed(int count) override {
    if (fail_untimed) return atl::make_error("cublasGemmEx: cuBLAS status 13");
    untimed_batches.push_back(count);
    now += per_iteration * count;
    return atl::Ok{};
  }
  atl::Expected<std::vector<double>> timed(int count) override {
    ++timed_calls;
    timed_count = count;
    timed_at = now;
    now += per_iteration * count;
    if (!answer.empty()) return answer;
    return std::vector<double>(static_cast<size_t>(count), per_iteration.count() / 1e6);
  }
  HostClock clock() {
    return [this] { return now; };
  }
};

}  // namespace

TEST(Timing, WarmUpRunsItsFullTimeBeforeTheOneTimedWindow) {
  FakeWork work;
  TimingPlan plan;  // 300 ms warm-up, 50 timed
  auto s = measure(work, plan, work.clock());
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(work.timed_calls, 1);
  EXPECT_EQ(work.timed_count, 50);
  // Nothing timed before 300 ms of warm-up had passed on the device's clock.
  EXPECT_GE(work.timed_at - std::chrono::steady_clock::time_point{}, 300ms);
  int warm = 0;
  for (int b : work.untimed_batches) warm += b;
  EXPECT_EQ(s->warmup_iterations, warm);
  EXPECT_GE(warm, 300);  // 1 ms each
  // Doubling batches: few round trips, and no batch past twice what was left.
  EXPECT_LE(work.untimed_batches.size(), 10u);
  EXPECT_EQ(s->iterations, 50);
  EXPECT_DOUBLE_EQ(s->median, 0.001);
}

TEST(Timing, TheMedianIgnoresOneSlowRepeatAndTheMeanDoesNot) {
  FakeWork work;
  work.answer = {1.0, 1.0, 1.0, 1.0, 9.0};
  TimingPlan plan;
  plan.warmup = 0ms;
  plan.warmup_iterations = 0;
  plan.iterations = 5;
  auto s = measure(work, plan, work.clock());
  ASSERT_TRUE(s);
  EXPECT_TRUE(work.untimed_batches.empty());
  EXPECT_DOUBLE_EQ(s->median, 1.0);
  EXPECT_DOUBLE_EQ(s->mean, 2.6);
  EXPECT_DOUBLE_EQ(s->min, 1.0);
  EXPECT_DOUBLE_EQ(s->max, 9.0);
  EXPECT_DOUBLE_EQ(summarize({4.0, 1.0, 3.0, 2.0}).median, 2.5);
  EXPECT_EQ(summarize({}).iterations, 0);
}

TEST(Timing, ACountOfWarmUpIterationsIsMetEvenWithNoWarmUpTime) {
  FakeWork work;
  TimingPlan plan;
  plan.warmup = 0ms;
  plan.warmup_iterations = 5;  // nccl-tests' -w 5
  plan.iterations = 20;
  auto s = measure(work, plan, work.clock());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->warmup_iterations, 5);
  EXPECT_EQ(work.timed_count, 20);
}

TEST(Timing, ErrorsAndEmptyPlansAreRefusedNotTimed) {
  FakeWork work;
  work.fail_untimed = true;
  auto failed = measure(work, TimingPlan{}, work.clock());
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().find("cublasGemmEx"), std::string::npos);
  EXPECT_EQ(work.timed_calls, 0);
  FakeWork none;
  TimingPlan zero;
  zero.iterations = 0;
  EXPECT_FALSE(measure(none, zero, none.clock()));
}

TEST(Timing, TheCpuBackendsGemmWarmsUpThenTimesEveryRepeat) {
  auto cpu = make_cpu_backend(2);
  GemmConfig config;
  config.size = 32;
  config.repeats = 7;
  config.warmup = 20ms;
  auto r = cpu->gemm(0, config);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->timing.iterations, 7);
  EXPECT_GE(r->timing.warmup_iterations, 1);
  EXPECT_GE(r->timing.warmup_seconds, 0.02);
  EXPECT_GT(r->tflops, 0);
  EXPECT_LE(r->timing.min, r->timing.median);
  EXPECT_LE(r->timing.median, r->timing.max);
}

TEST(NoFallback, APodThatDeclaresGpusFailsWithoutThemSayingWhatCudaSaid) {
  auto none = require_gpus("cpu", 1, 8, "cudaGetDeviceCount: no CUDA-capable device is detected");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error(),
            "the pod declares 8 GPUs but CUDA sees none (cudaGetDeviceCount: no CUDA-capable "
            "device is detected)");
  auto fewer = require_gpus("cuda", 7, 8, "");
  ASSERT_FALSE(fewer);
  EXPECT_EQ(fewer.error(), "the pod declares 8 GPUs but CUDA sees 7");
  EXPECT_FALSE(require_gpus("cuda", 2, 1, ""));  // more than declared: not the pod it claims
  EXPECT_EQ(require_gpus("cpu", 1, 1, "x").error(),
            "the pod declares 1 GPU but CUDA sees none (x)");
  EXPECT_TRUE(require_gpus("cuda", 8, 8, ""));
  EXPECT_TRUE(require_gpus("cpu", 1, 0, "no device"));   // a CPU pod
  EXPECT_TRUE(require_gpus("cpu", 1, -1, "no device"));  // by hand: whatever is there
}

TEST(NoFallback, TheChoiceSaysWhyItIsNotCuda) {
  auto choice = choose_backend();
  ASSERT_TRUE(choice.backend);
  if (choice.backend->name() == "cuda") GTEST_SKIP() << "a GPU answers here";
  EXPECT_FALSE(choice.cuda_note.empty());  // never a silent fallback
  if (cuda_compiled_in()) {
    EXPECT_NE(choice.cuda_note.find("cudaGetDeviceCount"), std::string::npos);
  }
}

TEST(WorldSizeOne, NoBandwidthIsReportedForOneRank) {
  auto one = allreduce_figures(1LL << 30, 0.001, 1);
  EXPECT_FALSE(one.measured);
  EXPECT_NE(one.note.find("world size 1"), std::string::npos);
  EXPECT_EQ(one.busbw, 0);
  auto two = allreduce_figures(1LL << 30, 1.0, 2);
  ASSERT_TRUE(two.measured);
  EXPECT_DOUBLE_EQ(two.busbw, two.algbw);  // 2(n-1)/n = 1
  auto eight = allreduce_figures(8'000'000'000LL, 1.0, 8);
  EXPECT_DOUBLE_EQ(eight.algbw, 8.0);
  EXPECT_DOUBLE_EQ(eight.busbw, 14.0);
  EXPECT_FALSE(allreduce_figures(8, 0, 4).measured);
}

// What NVML said on the H200 of bench/results/gpu-h200.md during its burn.
NvmlReadings h200_under_burn() {
  NvmlReadings r;
  r.ecc_uncorrected = 0;
  r.remapped = RemappedRows{0, 0, false, false};
  r.retired_pages_pending = std::nullopt;  // NVML: not supported on Hopper
  r.slowdown_temperature_c = 89;
  r.power_limit_mw = 700000;
  r.pcie_gen_max = 5;
  r.pcie_width_max = 16;
  r.pcie_replays = 0;
  add_sample(r, {clock_reason::sw_power_cap, 64u, 697300u, 5u, 16u});
  add_sample(r, {clock_reason::gpu_idle, 51u, 280000u, 1u, 16u});
  return r;
}

bool has(const std::vector<HealthFinding>& findings, Severity s, const std::string& text) {
  for (const auto& f : findings)
    if (f.severity == s && f.text.find(text) != std::string::npos) return true;
  return false;
}

TEST(NvmlHealthRules, AHealthyH200AtItsPowerCapPasses) {
  auto r = h200_under_burn();
  EXPECT_EQ(r.samples, 2);
  EXPECT_EQ(*r.max_pcie_gen, 5u);  // the link reached Gen5 once busy
  EXPECT_EQ(*r.max_power_mw, 697300u);
  auto f = judge_health(r);
  for (const auto& x : f) EXPECT_NE(x.severity, Severity::fail) << x.text;
  EXPECT_TRUE(has(f, Severity::info, "retired pages: not supported"));
  EXPECT_TRUE(has(f, Severity::info, "power cap"));
  EXPECT_TRUE(has(f, Severity::info, "temperature at most 64 C (slowdown at 89 C)"));
  EXPECT_TRUE(has(f, Severity::info, "power at most 697 W of a 700 W limit"));
  EXPECT_TRUE(has(f, Severity::info, "PCIe link Gen5 x16"));
}

TEST(NvmlHealthRules, RowRemappingPendingOrFailedFails) {
  auto r = h200_under_burn();
  r.remapped = RemappedRows{0, 3, true, false};
  auto f = judge_health(r);
  EXPECT_EQ(f.front().severity, Severity::fail);  // worst first
  EXPECT_TRUE(has(f, Severity::fail, "row remapping pending: reset the GPU"));
  EXPECT_TRUE(has(f, Severity::info, "3 for uncorrectable"));
  r.remapped = RemappedRows{0, 0, false, true};
  EXPECT_TRUE(has(judge_health(r), Severity::fail, "row remapping failed"));
  // Pre-Ampere: page retirement instead.
  r.remapped.reset();
  r.retired_pages_pending = true;
  EXPECT_TRUE(has(judge_health(r), Severity::fail, "retired pages are waiting"));
  r.retired_pages_pending.reset();
  EXPECT_TRUE(has(judge_health(r), Severity::warn, "neither row remapping nor page retirement"));
  r = h200_under_burn();
  r.ecc_uncorrected = 2;
  EXPECT_TRUE(has(judge_health(r), Severity::fail, "2 uncorrected ECC errors"));
}

TEST(NvmlHealthRules, HardwareSlowdownPowerBrakeAndHeatFail) {
  auto r = h200_under_burn();
  add_sample(r, {clock_reason::hw_slowdown | clock_reason::hw_power_brake, 70u, 500000u, 5u, 16u});
  auto f = judge_health(r);
  EXPECT_TRUE(has(f, Severity::fail, "clocks held down by HW slowdown, HW power brake"));
  r = h200_under_burn();
  add_sample(r, {clock_reason::sw_thermal, 86u, 600000u, 5u, 16u});
  f = judge_health(r);
  EXPECT_TRUE(has(f, Severity::warn, "SW thermal"));
  EXPECT_TRUE(has(f, Severity::warn, "within 5 C of the slowdown threshold"));
  add_sample(r, {clock_reason::hw_thermal, 90u, 600000u, 5u, 16u});
  f = judge_health(r);
  EXPECT_TRUE(has(f, Severity::fail, "temperature 90 C reached the slowdown threshold of 89 C"));
  EXPECT_TRUE(has(f, Severity::fail, "HW thermal slowdown"));
}

TEST(NvmlHealthRules, ADegradedOrNoisyPcieLinkIsCaught) {
  auto r = h200_under_burn();
  add_sample(r, {0u, 50u, 300000u, 5u, 8u});
  EXPECT_TRUE(has(judge_health(r), Severity::fail, "PCIe link x8 of x16"));
  r = h200_under_burn();
  r.max_pcie_gen = 3;  // never above Gen3 though Gen5 is possible
  EXPECT_TRUE(has(judge_health(r), Severity::warn, "PCIe link reached Gen3 of Gen5"));
  r = h200_under_burn();
  r.pcie_replays = kMaxPcieReplays + 1;
  EXPECT_TRUE(has(judge_health(r), Severity::fail, "PCIe replay counter 81"));
  r.pcie_replays = 5;
  EXPECT_TRUE(has(judge_health(r), Severity::info, "PCIe replay counter 5"));
}

TEST(NvmlHealthRules, ClockReasonsInWordsAndUnsupportedReadingsSaySo) {
  EXPECT_EQ(describe_clock_reasons(0), "none");
  EXPECT_EQ(describe_clock_reasons(clock_reason::sw_power_cap | clock_reason::gpu_idle),
            "SW power cap, idle");
  EXPECT_EQ(describe_clock_reasons(0x1000), "other (0x1000)");
  NvmlReadings r;
  add_sample(r, {});  // NVML answered nothing
  EXPECT_FALSE(r.clock_reasons_read);
  EXPECT_TRUE(has(judge_health(r), Severity::info, "clock event reasons: not supported"));
  NvmlHealth h;
  h.available = true;
  h.findings = judge_health(h200_under_burn());
  EXPECT_TRUE(h.ok());
  h.xids = {79};  // fell off the bus
  EXPECT_FALSE(h.ok());
}

TEST(PhaseMonitor, AStuckPhaseIsReportedWithItsGpuAndName) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<int, std::string>> stuck;
  PhaseMonitor monitor(
      [&](int gpu, const std::string& phase, std::chrono::milliseconds) {
        std::lock_guard<std::mutex> lock(mu);
        stuck.emplace_back(gpu, phase);
        cv.notify_all();
      },
      5ms);
  {
    PhaseMonitor::Scope quick(&monitor, 0, "gemm round 1", 10s);  // ends in time
  }
  monitor.enter(3, "gemm round 7", 30ms);  // never leaves: a hung CUDA call
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 30s, [&] { return !stuck.empty(); }));
  ASSERT_EQ(stuck.size(), 1u);
  EXPECT_EQ(stuck[0].first, 3);
  EXPECT_EQ(stuck[0].second, "gemm round 7");
}

TEST(PhaseMonitor, EnteringTheNextPhaseRenewsTheDeadline) {
  std::atomic<int> reports{0};
  PhaseMonitor monitor([&](int, const std::string&, std::chrono::milliseconds) { ++reports; }, 1ms);
  monitor.enter(0, "round 1", 10s);
  monitor.enter(0, "round 2", 10s);
  monitor.leave(0);
  monitor.leave(5);  // never entered: nothing happens
  EXPECT_EQ(reports.load(), 0);
}

TEST(PhaseMonitorDeathTest, TheDefaultActionPrintsAFailLineAndExits1) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::dup2(2, 1);  // the FAIL line goes to stdout; the matcher reads stderr
        PhaseMonitor monitor(exit_when_stuck("jo-x-worker-0"), 5ms);
        monitor.enter(2, "the memory test", 20ms);
        std::this_thread::sleep_for(30s);  // a hung phase; the monitor ends the process
      },
      ::testing::ExitedWithCode(1), "jo-x-worker-0 GPU 2: FAIL: GPU 2 stuck in the memory test");
}

// The periodic thread under the phase monitor and NVML's sampler: it ticks
// until stopped, and no tick starts after stop() returned (twice is fine).
TEST(Ticker, TicksUntilStoppedAndNeverAfter) {
  std::mutex mu;
  std::condition_variable cv;
  int ticks = 0;
  Ticker ticker(1ms, [&] {
    std::lock_guard<std::mutex> lock(mu);
    ++ticks;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 30s, [&] { return ticks >= 3; }));
  }
  ticker.stop();
  int at_stop = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    at_stop = ticks;
  }
  ticker.stop();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(ticks, at_stop);
}

// A long period does not hold up stop(): it wakes the thread at once.
TEST(Ticker, StopDoesNotWaitForThePeriod) {
  std::atomic<int> ticks{0};
  const auto t0 = std::chrono::steady_clock::now();
  {
    Ticker ticker(std::chrono::hours(1), [&] { ++ticks; });
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::minutes(30));
  EXPECT_EQ(ticks.load(), 0);
}

// at_once: the first tick does not wait for the period (the GPU watch opens
// NVML as soon as a pod joins).
TEST(Ticker, AtOnceTicksRightAwayThenEveryPeriod) {
  std::mutex mu;
  std::condition_variable cv;
  int ticks = 0;
  Ticker ticker(
      std::chrono::hours(1),
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        ++ticks;
        cv.notify_all();
      },
      true);
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 30s, [&] { return ticks == 1; }));
}

TEST(Sweep, NcclTestsBeginEndFactor) {
  EXPECT_EQ(*sweep_sizes(8, 128, 2), (std::vector<std::int64_t>{8, 16, 32, 64, 128}));
  EXPECT_EQ(*sweep_sizes(1 << 20, 5 << 20, 4), (std::vector<std::int64_t>{1 << 20, 4 << 20}));
  EXPECT_EQ(*sweep_sizes(64, 64, 2), (std::vector<std::int64_t>{64}));
  EXPECT_EQ(sweep_sizes(8, 1LL << 40, 2)->size(), 38u);
  EXPECT_EQ(sweep_sizes(8LL << 30, INT64_MAX, 2)->back(), 1LL << 62);  // no overflow
  EXPECT_FALSE(sweep_sizes(2, 128, 2));                                // less than a float
  EXPECT_FALSE(sweep_sizes(128, 8, 2));                                // end below begin
  EXPECT_FALSE(sweep_sizes(8, 128, 1));                                // would never end
  auto huge = sweep_sizes(4, INT64_MAX / 2, 2);                        // 61 sizes: the limit is 64
  ASSERT_TRUE(huge);
  EXPECT_LE(huge->size(), 64u);
  EXPECT_FALSE(sweep_sizes(4, INT64_MAX / 2, 1));
}

TEST(Lagging, AGpuBelowNinetyPercentOfTheNodesMedianLags) {
  auto lag = lagging_devices({700, 690, 600, 705});
  EXPECT_EQ(lag, (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(lagging_devices({700}), std::vector<bool>{false});  // one GPU: nothing to compare
  EXPECT_EQ(lagging_devices({700, 0, 690}), (std::vector<bool>{false, false, false}));
  EXPECT_EQ(lagging_devices({}), std::vector<bool>{});
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2);
}

TEST(RandomInputs, UniformInMinusOneToOneTheSameOnEverySideAndRoundedToBf16) {
  double sum = 0;
  float lo = 1, hi = -1;
  for (std::uint64_t i = 0; i < 100000; ++i) {
    float v = random_unit(7, i);
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  EXPECT_LT(std::abs(sum / 100000), 0.02);
  EXPECT_LT(lo, -0.99f);
  EXPECT_GT(hi, 0.99f);
  EXPECT_EQ(random_unit(7, 5), random_unit(7, 5));
  EXPECT_NE(random_unit(7, 5), random_unit(8, 5));
  EXPECT_EQ(from_bf16_bits(to_bf16_bits(1.5f)), 1.5f);
  // bf16 steps by 1/128 above 1: a quarter step rounds down, halves go to even.
  EXPECT_EQ(from_bf16_bits(to_bf16_bits(1.0f + 1.0f / 512)), 1.0f);
  EXPECT_EQ(from_bf16_bits(to_bf16_bits(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(from_bf16_bits(to_bf16_bits(1.0f + 3.0f / 256)), 1.0f + 1.0f / 64);
}

TEST(RandomInputs, TheTolerantSpotCheckPassesFp32AndCatchesAPlantedError) {
  const int n = 64;
  std::vector<float> a(n * n), b(n * n);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = random_unit(1, i);
    b[i] = random_unit(2, i);
  }
  std::vector<float> c(n * n, 0.0f);
  for (int i = 0; i < n; ++i)
    for (int p = 0; p < n; ++p)
      for (int j = 0; j < n; ++j) c[i * n + j] += a[i * n + p] * b[p * n + j];
  EXPECT_EQ(spot_check_gemm_tolerant(a, b, c, n, 2), 0);
  c[n + 5] += 0.5f;
  c[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(spot_check_gemm_tolerant(a, b, c, n, 2), 2);
  auto cpu = make_cpu_backend(2);
  GemmConfig random;
  random.size = 48;
  random.repeats = 2;
  auto r = cpu->gemm(0, random);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ok());
}

TEST(SizeSpec, AListOrASweepAndNothingElse) {
  EXPECT_EQ(*parse_size_spec("512M,1G"), (std::vector<std::int64_t>{512LL << 20, 1LL << 30}));
  EXPECT_EQ(*parse_size_spec("8M:32M"), (std::vector<std::int64_t>{8 << 20, 16 << 20, 32 << 20}));
  EXPECT_EQ(*parse_size_spec("1M:64M:4"),
            (std::vector<std::int64_t>{1 << 20, 4 << 20, 16 << 20, 64 << 20}));
  EXPECT_EQ(format_size_list(*parse_size_spec("1M:4M")), "1M,2M,4M");
  EXPECT_EQ(format_size_list({4, 1536}), "4,1536");
  for (const char* bad : {"", "8M:", ":8M", "8M:1M", "8M:1G:1", "8M:1G:x", "8M:1G:2:2", "1X", "2",
                          "8M,,1G", "8M,", "-8M", "8M:1G:99999", "1G:1024G", "600G"}) {
    EXPECT_FALSE(parse_size_spec(bad)) << bad;
  }
  std::string many;
  for (int i = 0; i < 65; ++i) many += (i ? ",4" : "4");
  EXPECT_FALSE(parse_size_spec(many));
}

TEST(SupervisorDeadline, EveryStepGetsItsDurationTheWatchdogAndAGrace) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  EXPECT_EQ(node_tool_deadline({"gemm"}, seconds(20), 0), seconds(110));
  EXPECT_EQ(node_tool_deadline({"check"}, milliseconds(1), 0), milliseconds(1) + seconds(330));
  // An allreduce also waits for its members and for each size both ways.
  EXPECT_EQ(node_tool_deadline({"allreduce"}, seconds(20), 4), seconds(110 + 600 + 600));
  EXPECT_GT(node_tool_deadline({"allreduce"}, seconds(20), 30),
            node_tool_deadline({"allreduce"}, seconds(20), 4));
  EXPECT_EQ(node_tool_deadline({"check", "allreduce"}, seconds(1), 0),
            node_tool_deadline({"check"}, seconds(1), 0) +
                node_tool_deadline({"allreduce"}, seconds(1), 0));
}
