// A JobEffects of plain fields for the JobController's tests and the
// pieces' tests that hand their verdicts to a controller: what it reads is
// set by the test, every effect is written down in the order it came.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "atl/supervisor/job_controller.hpp"

namespace atl::supervisor {

struct Armed {
  JobTimer timer;
  std::chrono::milliseconds delay;
  std::int32_t tag;
};

// The pieces the controller does not own, as plain fields; every effect
// written down in the order it came.
class FakeEffects final : public JobEffects {
 public:
  // --- what the controller reads ---
  std::int64_t now_ms = 1000;
  int attempt_now = 1;
  bool done = true;  // user code: every process reported its end
  std::vector<PodView> pods;
  std::map<std::string, std::string> machines;  // pod -> node
  bool preflight_running = false;

  // --- what it did ---
  std::vector<std::string> prints;
  std::vector<os::JobRecord> saves;
  std::vector<TimelineEvent> events;
  std::vector<Armed> timers;
  std::vector<std::string> calls;  // effects on other pieces, by name
  std::size_t leaving = 0;         // wind_down's answer
  std::optional<int> outcome;

  std::int64_t unix_ms() const override { return now_ms; }
  int attempt() const override { return attempt_now; }
  bool user_code_done() const override { return done; }
  std::vector<PodView> pod_views() const override { return pods; }
  std::string missing_pods() const override {
    std::string out;
    for (const auto& p : pods)
      if (!p.joined) out += (out.empty() ? "" : ", ") + p.name;
    return out;
  }
  const std::string* machine_of(const std::string& pod) const override {
    auto it = machines.find(pod);
    return it == machines.end() ? nullptr : &it->second;
  }
  bool preflight_under_way() const override { return preflight_running; }

  void print(const std::string& line) override { prints.push_back(line); }
  void save(os::JobRecord record) override { saves.push_back(std::move(record)); }
  void add_event(const TimelineEvent& e) override { events.push_back(e); }
  void reset_journal() override { calls.push_back("reset_journal"); }
  void arm(JobTimer timer, std::chrono::milliseconds delay, std::int32_t tag) override {
    timers.push_back({timer, delay, tag});
  }
  void next_attempt() override {
    ++attempt_now;
    calls.push_back("next_attempt");
  }
  void start_user_code() override {
    done = false;
    calls.push_back("start_user_code");
  }
  void stop_user_code() override { calls.push_back("stop_user_code"); }
  void abandon_user_code(const std::string& why) override {
    done = true;
    calls.push_back("abandon_user_code: " + why);
  }
  void start_preflight() override {
    preflight_running = true;
    calls.push_back("start_preflight");
  }
  void drop_preflight() override { preflight_running = false; }
  void end_parked_debug_run() override { calls.push_back("end_parked_debug_run"); }
  void end_pod_work(const std::string& pod) override { calls.push_back("end_pod_work " + pod); }
  void pod_gone_while_parked(const std::string& detail) override {
    calls.push_back("pod_gone_while_parked: " + detail);
  }
  void placement_changed() override { calls.push_back("placement_changed"); }
  std::size_t wind_down(bool ok) override {
    calls.push_back(ok ? "wind_down ok" : "wind_down failed");
    return leaving;
  }
  void release(int code) override {
    EXPECT_FALSE(outcome) << "released twice";
    outcome = code;
  }

  // Helpers for the tests.
  void join_all() {
    for (auto& p : pods) p.joined = true;
  }
  bool called(const std::string& name) const {
    return std::find(calls.begin(), calls.end(), name) != calls.end();
  }
  int count(const std::string& name) const {
    return static_cast<int>(std::count(calls.begin(), calls.end(), name));
  }
  std::optional<Armed> last_timer(JobTimer timer) const {
    for (auto it = timers.rbegin(); it != timers.rend(); ++it)
      if (it->timer == timer) return *it;
    return std::nullopt;
  }
  bool printed(const std::string& line) const {
    return std::find(prints.begin(), prints.end(), line) != prints.end();
  }
};

}  // namespace atl::supervisor
