// The Supervisor's test head: a fake clock, an outbox that records each
// effect, and a Head that drives one job's Supervisor through its inputs
// (pods join, the pre-flight answered, ranks started, heartbeats ticked).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "atl/supervisor/supervisor.hpp"

namespace atl::supervisor::fixture {

using namespace std::chrono_literals;

class FakeClock final : public Clock {
 public:
  Liveness::TimePoint now() const override { return t_; }
  std::int64_t unix_ms() const override { return ms_; }
  void advance(Millis d) {
    t_ += d;
    ms_ += d.count();
  }

 private:
  Liveness::TimePoint t_ = Liveness::TimePoint{} + 1h;
  std::int64_t ms_ = 1'700'000'000'000;
};

class Recorder final : public Outbox {
 public:
  void put(Effect e) override { effects.push_back(std::move(e)); }
  template <class T>
  std::vector<T> all() const {
    std::vector<T> out;
    for (const auto& e : effects)
      if (auto* x = std::get_if<T>(&e)) out.push_back(*x);
    return out;
  }
  // The effects of type T so far, which leave the record.
  template <class T>
  std::vector<T> take() {
    std::vector<T> out;
    std::vector<Effect> rest;
    for (auto& e : effects) {
      if (auto* x = std::get_if<T>(&e)) {
        out.push_back(std::move(*x));
      } else {
        rest.push_back(std::move(e));
      }
    }
    effects = std::move(rest);
    return out;
  }
  bool printed(const std::string& part) const {
    for (const auto& p : all<effect::Print>())
      if (p.line.find(part) != std::string::npos) return true;
    return false;
  }
  std::vector<Effect> effects;
};

inline std::string pod_name(int i) { return "j1-worker-" + std::to_string(i); }

inline JobSpec spmd_spec(int workers, int spares) {
  JobSpec spec;
  spec.job_id = "j1";
  spec.mode = JobMode::spmd;
  spec.workers = workers;
  spec.spare_workers = spares;
  spec.nproc_per_node = 2;
  spec.entrypoint = "python train.py";
  spec.max_restarts = 3;
  spec.grace = 5s;
  spec.ready_timeout = 60s;
  spec.heartbeat.interval = 1s;
  spec.heartbeat.timeout = 5s;
  spec.hang_timeout = 10s;
  return spec;
}

// One job's head: the Supervisor with a fake clock and a recording outbox;
// pod i joins through agent i + 1, on node-i.
struct Head {
  FakeClock clock;
  Recorder out;
  std::unique_ptr<Supervisor> sup;
  std::set<std::string> silent;  // pods whose heartbeats stopped
  struct Due {
    Liveness::TimePoint at;
    bool is_wait = false;
    effect::Arm arm;
    effect::ArmWait wait;
  };
  std::vector<Due> due;  // timers armed, not fired yet (advance)

  // `settings`: the rest as headnode would fill them (the dashboard's URL, …).
  explicit Head(JobSpec spec, std::size_t finished_kept = 10000, SupervisorSettings settings = {}) {
    settings.finished_kept = finished_kept;
    settings.job = std::move(spec);
    settings.advertised_host = "10.0.0.1";
    settings.head_interface = "eth0";
    settings.tick = 100ms;
    sup = std::make_unique<Supervisor>(std::move(settings), clock, out, kHeadAgent);
    sup->start("10.0.0.1:7000", nullptr);
  }
  static AgentId agent(int i) { return AgentId{i + 1}; }
  static constexpr AgentId kHeadAgent{1000};  // the head pod's (the driver, Ray's head)
  NodeInfo info(int i) const {
    NodeInfo n;
    n.pod = pod_name(i);
    n.address = "10.0.1." + std::to_string(i);
    n.interface = "eth0";
    n.machine = "node-" + std::to_string(i);
    n.cpus = 8;
    return n;
  }
  void join(int pods) {
    for (int i = 0; i < pods; ++i) ASSERT_TRUE(sup->join(info(i), agent(i)).joined()) << i;
  }
  // Every pre-flight request answered as passed, round after round step,
  // until none is asked: the pods probed, reached, checked.
  void pass_preflight() {
    for (int step = 0; step < 10; ++step) {
      auto asks = out.take<effect::Ask>();
      if (asks.empty()) return;
      for (const auto& a : asks) sup->answered(a.back, PreflightReply{"", 4000});
    }
    ADD_FAILURE() << "the pre-flight kept asking";
  }
  // Each process launched so far reports that it started.
  std::vector<effect::Launch> start_launched() {
    auto launches = out.take<effect::Launch>();
    for (const auto& l : launches) {
      const auto pod =
          l.agent == kHeadAgent ? head_pod_name(sup->job().job_id) : sup->pod_of_agent(l.agent);
      EXPECT_TRUE(pod.has_value());
      for (const auto& p : l.order.ranks)
        sup->process_started({p.stream, p.attempt, pod.value_or(""), 100 + p.stream.rank});
    }
    return launches;
  }
  // Up to `d` of ticks; every joined pod that is not silent is heard each tick.
  void run_for(Millis d) {
    for (Millis t{0}; t < d; t += 100ms) {
      clock.advance(100ms);
      for (const auto& [pod, joined] : sup->pods().registry().joined_pods())
        if (!silent.count(pod)) sup->on(PodHeartbeat{pod, -1});
      sup->timer(kHeartbeatTimer, 0);
    }
  }
  // The fake clock moves by `d`, firing each timer and long-poll deadline
  // the Supervisor armed as it falls due, in order (the heartbeat round
  // hears every pod that is not silent first, as live pods would answer).
  void advance(Millis d) {
    const auto end = clock.now() + d;
    for (;;) {
      for (auto& a : out.take<effect::Arm>()) due.push_back({clock.now() + a.after, false, a, {}});
      for (auto& w : out.take<effect::ArmWait>())
        due.push_back({clock.now() + w.after, true, {}, w});
      auto next = std::min_element(due.begin(), due.end(),
                                   [](const Due& a, const Due& b) { return a.at < b.at; });
      if (next == due.end() || next->at > end) break;
      Due fire = *next;
      due.erase(next);
      if (fire.at > clock.now())
        clock.advance(std::chrono::duration_cast<Millis>(fire.at - clock.now()));
      if (fire.is_wait) {
        sup->wait_expired(fire.wait.kind, fire.wait.waiter);
        continue;
      }
      if (fire.arm.kind == kHeartbeatTimer)
        for (const auto& [pod, joined] : sup->pods().registry().joined_pods())
          if (!silent.count(pod)) sup->on(PodHeartbeat{pod, -1});
      sup->timer(fire.arm.kind, fire.arm.arg);
    }
    if (end > clock.now()) clock.advance(std::chrono::duration_cast<Millis>(end - clock.now()));
  }
  // The job from start to command: pods joined, checked, ranks running.
  void to_command(int pods) {
    join(pods);
    ASSERT_EQ(out.take<effect::CheckSoon>().size(), 1u);  // once all are in
    sup->all_in();
    pass_preflight();
    ASSERT_EQ(sup->state(), JobState::command);
    start_launched();
  }
  // The job in command, then stopped by atlctl stop: every rank ended.
  void to_debug_stop(int pods) {
    to_command(pods);
    ASSERT_EQ(sup->begin_stop().code, ReplyCode::ok);
    for (int i = 0; i < pods; ++i) end_ranks_on(pod_name(i), 15);
    ASSERT_EQ(sup->state(), JobState::debugStop);
    out.effects.clear();
  }
  // Every rank still running on `pod` reports its end by `signal`.
  void end_ranks_on(const std::string& pod, int signal) {
    for (const auto& [stream, r] : sup->code().ranks())
      if (!r.done && sup->pod_of_rank(stream) == pod)
        sup->process_ended({user_code_stream(stream), r.attempt, pod, 0, signal, "", ""});
  }
  std::vector<std::string> launched_pods(const std::vector<effect::Launch>& launches) const {
    std::vector<std::string> pods;
    for (const auto& l : launches) pods.push_back(sup->pod_of_agent(l.agent).value_or("?"));
    std::sort(pods.begin(), pods.end());
    return pods;
  }
};

}  // namespace atl::supervisor::fixture
